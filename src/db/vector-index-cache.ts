import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../concurrency/periodic-rounds.js';
import type { SqlRunner } from '../plugins.js';

/**
 * Whether pgvector's HNSW indexes fit in PostgreSQL's buffer cache (`shared_buffers`).
 *
 * A search walks its collection's graph through the cache; pages outside it are read from the
 * operating system each time. At 115k chunks of 384 dimensions the index took 225 MB against the
 * default 128 MB, and semantic queries took 14.8 ms p50 where, with 1 GB, they took 9.8
 * (bench/README.md, "PostgreSQL's buffer cache"). Nothing in a query's answer shows this, and an
 * operator sizing PostgreSQL cannot know how large the service's indexes have grown, so the service
 * says it: in `GET /v1/stats` and in one warn line each time the indexes outgrow the cache, then
 * double.
 */
export interface VectorIndexCache {
  /** Every HNSW index of the database, together. */
  index_bytes: number;
  shared_buffers_bytes: number;
}

export async function readVectorIndexCache(sql: SqlRunner): Promise<VectorIndexCache> {
  const [row] = await sql<{ index_bytes: string | number; shared_buffers_bytes: string | number }>(
    `select coalesce(sum(pg_relation_size(c.oid)), 0) as index_bytes,
            pg_size_bytes(current_setting('shared_buffers')) as shared_buffers_bytes
       from pg_class c join pg_am method on method.oid = c.relam
      where c.relkind = 'i' and method.amname = 'hnsw'`,
  );
  return { index_bytes: Number(row!.index_bytes), shared_buffers_bytes: Number(row!.shared_buffers_bytes) };
}

/**
 * Checks at start, then every `intervalMs` (with the table upkeep's interval), and warns as the
 * indexes outgrow the cache: an operator reading the start's log lines sees it there, not a minute
 * later.
 */
export class VectorIndexCacheWatch {
  private readonly rounds: PeriodicRounds;
  /** The index size last warned about; 0 when the indexes fit. */
  private warnedAtBytes = 0;

  constructor(private readonly sql: SqlRunner, private readonly logger: FastifyBaseLogger, intervalMs: number) {
    this.rounds = new PeriodicRounds(async () => this.observe(await readVectorIndexCache(this.sql)), {
      intervalMs, logger, work: 'checking the size of the vector indexes against shared_buffers', firstRoundAtStart: true,
    });
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }

  /** Warns when the indexes first exceed the cache, and again each time they double since the last warning. */
  observe(cache: VectorIndexCache): void {
    if (cache.index_bytes <= cache.shared_buffers_bytes) {
      this.warnedAtBytes = 0;
      return;
    }
    if (this.warnedAtBytes > 0 && cache.index_bytes < 2 * this.warnedAtBytes) return;
    this.warnedAtBytes = cache.index_bytes;
    const megabytes = (bytes: number) => `${Math.round(bytes / 1_048_576)} MB`;
    this.logger.warn(
      cache,
      `pgvector's HNSW indexes take ${megabytes(cache.index_bytes)}, more than PostgreSQL's shared_buffers (${megabytes(cache.shared_buffers_bytes)}): `
      + 'semantic searches read index pages from outside its cache and slow down; raise shared_buffers above the indexes\' size',
    );
  }
}
