import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../concurrency/periodic-rounds.js';
import type { EmbeddingCache } from './embedding-cache.js';

/** How often the cache's size is looked at. */
const ROUND_INTERVAL_MS = 600_000;

/**
 * Keeps the embedding cache within `maxBytes` (0: unbounded), at start and every ten minutes, by
 * deleting its oldest vectors. The cache keeps a provider's vector of every text it embedded, so
 * without a bound it held a second copy of every collection embedded by a provider: a 1536-dimension
 * vector is 8 kB of base64, 8 GB a million chunks. The newest vectors are what a re-upload or
 * re-chunking of recent documents asks for again.
 */
export class EmbeddingCacheBound {
  private readonly rounds: PeriodicRounds;

  constructor(private readonly cache: EmbeddingCache, logger: FastifyBaseLogger, private readonly maxBytes: number) {
    this.rounds = new PeriodicRounds(async () => {
      const evicted = await this.enforce();
      if (evicted > 0) logger.info({ evicted, max_bytes: maxBytes }, 'evicted the oldest embeddings from the cache to keep it within EMBEDDING_CACHE_MAX_MB');
    }, { intervalMs: maxBytes > 0 ? ROUND_INTERVAL_MS : 0, logger, work: 'bounding the embedding cache', firstRoundAtStart: true });
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }

  /** Deletes the oldest vectors beyond the bound now; returns how many. */
  enforce(): Promise<number> {
    return this.maxBytes > 0 ? this.cache.evictOldest(this.maxBytes) : Promise.resolve(0);
  }
}
