import { ProviderError } from '../errors.js';
import type { EmbeddingModel, EmbeddingModelInfo, EmbeddingResult } from '../plugins.js';
import { estimateTokens, planBatches, type BatchLimits } from './embedding-batches.js';
import { endpoint, type ProviderHttpClient } from './provider-http-client.js';

export type EmbeddingPurpose = 'document' | 'query';

/** One provider's wire format: how a batch becomes a request, and a response becomes vectors. */
export interface EmbeddingProtocol {
  limits: BatchLimits;
  /** Path below the base URL (`embeddings`, `embed`) and the JSON body for one batch. */
  request(texts: string[], purpose: EmbeddingPurpose): { path: string; body: unknown };
  /** Vectors in input order and billed tokens when the response says; throws on a body of another shape. */
  parse(response: unknown): { vectors: unknown[]; tokens: number | undefined };
}

export interface RemoteEmbeddingModelOptions {
  provider: string;
  model: string;
  /** Undefined in connection tests of models of unknown dimension: vectors of any one length are accepted. */
  dimension: number | undefined;
  baseUrl: string;
  protocol: EmbeddingProtocol;
  client: ProviderHttpClient;
}

/**
 * An embedding model behind an HTTP API: batches within the provider's limits, runs the batches
 * side by side (bounded by the client), checks every vector, and counts tokens.
 */
export class RemoteEmbeddingModel implements EmbeddingModel {
  readonly provider: string;
  readonly model: string;
  readonly dimension: number;

  constructor(private readonly options: RemoteEmbeddingModelOptions) {
    this.provider = options.provider;
    this.model = options.model;
    this.dimension = options.dimension ?? 0;
  }

  async embed(texts: string[], purpose: EmbeddingPurpose): Promise<EmbeddingResult> {
    if (texts.length === 0) return { vectors: [], tokens: 0 };
    const ranges = planBatches(texts, this.options.protocol.limits, this.options.client.limit.limit);
    const results = await Promise.all(ranges.map(([start, end]) => this.embedBatch(texts.slice(start, end), purpose)));
    return { vectors: results.flatMap((result) => result.vectors), tokens: results.reduce((sum, result) => sum + result.tokens, 0) };
  }

  private async embedBatch(texts: string[], purpose: EmbeddingPurpose): Promise<EmbeddingResult> {
    const { protocol, client, baseUrl, provider } = this.options;
    const { path, body } = protocol.request(texts, purpose);
    const response = await client.postJson(endpoint(baseUrl, path), body, purpose === 'query' ? 'interactive' : 'background');
    let parsed: ReturnType<EmbeddingProtocol['parse']>;
    try {
      parsed = protocol.parse(response);
    } catch (error) {
      throw new ProviderError(client.redact(`${provider} answered with an unexpected body: ${(error as Error).message}`), false);
    }
    if (parsed.vectors.length !== texts.length) {
      throw new ProviderError(`${provider} returned ${parsed.vectors.length} embeddings for ${texts.length} texts`, false);
    }
    const vectors = parsed.vectors.map((vector) => {
      if (!Array.isArray(vector) || !vector.every((value) => typeof value === 'number' && Number.isFinite(value))) {
        throw new ProviderError(`${provider} returned an embedding that is not a list of numbers`, false);
      }
      return Float32Array.from(vector as number[]);
    });
    const expected = this.options.dimension ?? vectors[0]!.length;
    const wrong = vectors.find((vector) => vector.length !== expected);
    if (wrong) {
      throw new ProviderError(`${provider} model ${this.model} returned ${wrong.length}-dimensional vectors, but dimension ${expected} is configured`, false);
    }
    const tokens = parsed.tokens ?? texts.reduce((sum, text) => sum + estimateTokens(text), 0);
    return { vectors, tokens };
  }
}

/** Whether a provider can produce `dimension` for a model it knows. */
export function supportsDimension(info: EmbeddingModelInfo, dimension: number): boolean {
  if (dimension === info.dimension || info.dimensions?.includes(dimension)) return true;
  return info.minDimension !== undefined && dimension >= info.minDimension && dimension <= info.dimension;
}

/** The value at a property path of parsed JSON, or undefined where the path does not exist. */
export function at(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** The list at a property path, or an error naming the path (the response has another shape). */
export function listAt(value: unknown, ...path: string[]): unknown[] {
  const found = at(value, ...path);
  if (!Array.isArray(found)) throw new Error(`"${path.join('.')}" is not a list`);
  return found;
}

/** A token count when the value is one, else undefined (the caller then estimates). */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}
