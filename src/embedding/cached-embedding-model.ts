import type { EmbeddingModel, EmbeddingResult } from '../plugins.js';
import { sha256Hex } from '../crypto/tokens.js';
import { modelKey, type EmbeddingCache } from './embedding-cache.js';
import type { EmbeddingUsageLedger } from './embedding-usage.js';

export interface CachedEmbeddingContext {
  collectionId: string;
  /** The collection's base URL ('' for the provider's default): part of what identifies a vector. */
  baseUrl: string;
  cache: EmbeddingCache;
  ledger: EmbeddingUsageLedger;
  /** The `embedding_cache_enabled` setting, read on each call so that an admin's change applies at once. */
  cacheEnabled(): Promise<boolean>;
}

/**
 * A collection's remote embedding model behind the embedding cache, with its usage recorded: texts
 * already embedded with the same model come from the database, only the others reach the provider
 * (each distinct text once), and every call adds its billed tokens and cache hits to the ledger.
 */
export class CachedEmbeddingModel implements EmbeddingModel {
  readonly provider: string;
  readonly model: string;
  readonly dimension: number;

  constructor(private readonly inner: EmbeddingModel, private readonly context: CachedEmbeddingContext) {
    this.provider = inner.provider;
    this.model = inner.model;
    this.dimension = inner.dimension;
  }

  async embed(texts: string[], purpose: 'document' | 'query'): Promise<EmbeddingResult> {
    if (texts.length === 0) return { vectors: [], tokens: 0 };
    const { cache, ledger, collectionId } = this.context;
    const usage = { collectionId, provider: this.provider, model: this.model, texts: texts.length };
    if (!(await this.context.cacheEnabled())) {
      const result = await this.inner.embed(texts, purpose);
      ledger.record({ ...usage, tokens: result.tokens, cacheHits: 0, cacheMisses: 0 });
      return result;
    }

    const key = modelKey({ provider: this.provider, model: this.model, dimension: this.dimension, baseUrl: this.context.baseUrl, purpose });
    const hashes = texts.map((text) => sha256Hex(text));
    const known = await cache.lookup(key, [...new Set(hashes)]);
    const missing = new Map<string, string>();
    hashes.forEach((hash, index) => {
      if (!known.has(hash)) missing.set(hash, texts[index]!);
    });
    let tokens = 0;
    if (missing.size > 0) {
      const fresh = await this.inner.embed([...missing.values()], purpose);
      tokens = fresh.tokens;
      const entries = [...missing.keys()].map((hash, index) => ({ hash, vector: fresh.vectors[index]! }));
      for (const entry of entries) known.set(entry.hash, entry.vector);
      await cache.store(key, entries);
    }
    ledger.record({ ...usage, tokens, cacheHits: texts.length - missing.size, cacheMisses: missing.size });
    return { vectors: hashes.map((hash) => known.get(hash)!), tokens };
  }
}
