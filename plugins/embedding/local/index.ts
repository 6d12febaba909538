/**
 * The `local` embedding plugin: deterministic, offline, free, no key. It is the default so the
 * service works out of the box and tests need no network; quality is lexical (see
 * hashed-text-vector.ts), so hosted models remain the choice for semantic search.
 */
import type { EmbeddingConfig, EmbeddingModel, EmbeddingResult, PluginDefinition } from '../../../src/plugins.js';
import { EmbeddingThreads } from './embedding-threads.js';
import { hashedTextVector } from './hashed-text-vector.js';

/** 384 matches common small sentence encoders (all-MiniLM-L6-v2), so switching keeps the column size. */
export const defaultLocalEmbeddingDimension = 384;

/** Batches at least this large go to a worker thread; smaller ones (queries) are embedded in place. */
const threadedBatchMinimum = 8;
/** Shared by every model instance: one set of threads per process. */
const threads = new EmbeddingThreads();

class LocalHashEmbeddingModel implements EmbeddingModel {
  readonly provider = 'local';

  constructor(
    readonly model: string,
    readonly dimension: number,
  ) {}

  /** Documents and queries share one space: the hashing is symmetric, `purpose` changes nothing. */
  async embed(texts: string[], _purpose: 'document' | 'query'): Promise<EmbeddingResult> {
    if (texts.length < threadedBatchMinimum) {
      return { vectors: texts.map((text) => Float32Array.from(hashedTextVector(text, this.dimension))), tokens: 0 };
    }
    const matrix = await threads.embed(texts, this.dimension);
    // Views of the one matrix, not copies: every consumer reads or copies them.
    const vectors = texts.map((_, row) => matrix.subarray(row * this.dimension, (row + 1) * this.dimension));
    return { vectors, tokens: 0 };
  }
}

function createLocalEmbeddingModel(config: EmbeddingConfig): EmbeddingModel {
  const dimension = config.dimension ?? defaultLocalEmbeddingDimension;
  if (!Number.isInteger(dimension) || dimension < 1) {
    throw new RangeError(`local embedding dimension must be a positive integer, got ${dimension}`);
  }
  return new LocalHashEmbeddingModel(config.model ?? `local-hash-${dimension}`, dimension);
}

export const localEmbeddingPlugin: PluginDefinition<'embedding'> = {
  kind: 'embedding',
  name: 'local',
  description: 'Offline feature-hashing embeddings (word unigrams, bigrams, character 3-5-grams); no key, no network',
  create: (config) => createLocalEmbeddingModel(config),
};
