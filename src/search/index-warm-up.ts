import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';
import { prepareIndexesOfLiveCollection, type SearchIndexes } from './search-indexes.js';

/**
 * Loads the in-process indexes of every collection in the background after a start, most recently
 * queried first. Without it, the first query of each collection after a restart waited for that
 * collection's load: the graph from its snapshot and the BM25 index from the chunk rows, seconds
 * at 40,000 chunks. A query arriving during a load waits for that same load, not a second one.
 * One collection at a time, so requests keep their turns on the database (PGlite has one
 * connection); a collection that fails to load is logged and left to its first query.
 */
export class IndexWarmUp {
  private stopped = false;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly sql: SqlRunner, private readonly indexes: SearchIndexes, private readonly logger: FastifyBaseLogger) {}

  start(): void {
    this.running = this.loadAll().catch((error: unknown) => {
      this.logger.warn({ err: error }, 'could not list the collections to load their search indexes; each loads at its first query');
    });
  }

  /** Resolves once the loads started by `start` are done. */
  done(): Promise<void> {
    return this.running;
  }

  /** No further collection is loaded; resolves when the one being loaded is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async loadAll(): Promise<void> {
    const started = performance.now();
    // The last query of each collection through the (collection_id, created_at) index, not a scan of every event.
    const collections = await this.sql<{ id: string; dimension: number }>(
      `select collections.id, collections.dimension from collections
       left join lateral (
         select created_at from query_events where query_events.collection_id = collections.id order by created_at desc limit 1
       ) last_query on true
       order by last_query.created_at desc nulls last, collections.created_at desc`,
    );
    let loaded = 0;
    for (const collection of collections) {
      if (this.stopped) return;
      const collectionStarted = performance.now();
      try {
        // Drops what it loaded when the collection was deleted meanwhile.
        if (!await prepareIndexesOfLiveCollection(this.sql, this.indexes, collection)) continue;
        loaded += 1;
        this.logger.debug({ collectionId: collection.id, seconds: secondsSince(collectionStarted) }, 'search indexes of a collection loaded');
      } catch (error) {
        this.logger.warn({ err: error, collectionId: collection.id }, 'could not load the search indexes of a collection; its first query tries again');
      }
    }
    this.logger.info({ collections: loaded, seconds: secondsSince(started) }, 'search indexes loaded');
  }
}

function secondsSince(started: number): number {
  return Math.round(performance.now() - started) / 1000;
}
