import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';
import { dropCollectionIndexes, removeFromIndexes, type SearchIndexes } from './search-indexes.js';

/** One statement on some connection: a SqlRunner, or an EntityManager's `getConnection().execute`. */
export type RunStatement = (query: string, params: unknown[]) => Promise<unknown>;

/**
 * Deletes the record a row deletion wrote (migration 0014) once its index entries are gone. Left in
 * place when the removal failed, so PendingIndexRemovalSweep does it later.
 */
export async function settleIndexRemoval(run: RunStatement, owedRemovalId: number | null): Promise<void> {
  if (owedRemovalId === null) return;
  await run('delete from pending_index_removals where id = ?', [owedRemovalId]);
}

export interface IndexRemovalRuntime {
  sql: SqlRunner;
  indexes: SearchIndexes;
  /** Moves the collection's write version on, so query results cached with the removed entries expire. */
  recordWrite(collectionId: string): Promise<void>;
}

export interface IndexRemovalSweepOptions {
  intervalMs?: number;
  /**
   * A record younger than this is left to the request that wrote it, which is likely removing the
   * entries right now. Doing it twice is harmless (every index removes by key or by collection, and
   * the SQL keyword index takes BM25 statistics from the postings it deletes), only wasted.
   */
  graceMs?: number;
}

interface OwedRemoval {
  id: string | number;
  collection_id: string;
  /** Null: every entry of the collection, which was deleted. */
  chunk_keys: Array<string | number> | null;
  attempts: number;
}

const DEFAULT_INTERVAL_MS = 30_000;
const DEFAULT_GRACE_MS = 60_000;
/** Records taken per sweep; the rest wait for the next one. */
const RECORDS_PER_SWEEP = 100;
/**
 * How long a taken record is left to the sweep that took it before another replica may take it
 * again: longer than dropping a large collection's vectors takes. Expiring early costs a duplicate
 * removal, which is harmless; a sweep that died with the record is retried once it expires.
 */
const CLAIM_MS = 10 * 60_000;
/** A removal that keeps failing is retried ever later, up to an hour apart. */
const MAX_RETRY_DELAY_MS = 60 * 60_000;

/**
 * Performs the index removals that deletions recorded and did not complete (their request answered
 * 500; a retried DELETE is a 404 and could not remove them), at start and then every interval.
 * Records are taken with FOR UPDATE SKIP LOCKED by one statement that also pushes their next
 * attempt past CLAIM_MS, so several replicas share them without a transaction held across the
 * index calls (the keyword index opens transactions of its own, and PGlite has one connection).
 */
export class PendingIndexRemovalSweep {
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private timer: NodeJS.Timeout | undefined;
  private sweeping = false;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly runtime: IndexRemovalRuntime, private readonly logger: FastifyBaseLogger, options: IndexRemovalSweepOptions = {}) {
    this.intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      // A sweep still running (a large collection being dropped) gets no other queued behind it.
      if (!this.sweeping) void this.sweepLogged();
    }, this.intervalMs);
    this.timer.unref();
    void this.sweepLogged();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.chain;
  }

  /**
   * Performs the owed removals older than the grace period, after any sweep in progress; returns
   * how many were completed. A removal that fails is logged and kept for a later sweep; only a
   * failure to read the records throws.
   */
  sweep(): Promise<number> {
    const next = this.chain.then(() => this.sweepOnce());
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async sweepLogged(): Promise<void> {
    await this.sweep().catch((error: unknown) => this.logger.warn({ err: error }, 'could not read the pending search-index removals'));
  }

  private async sweepOnce(): Promise<number> {
    this.sweeping = true;
    try {
      const owed = await this.runtime.sql<OwedRemoval>(
        `update pending_index_removals set attempts = attempts + 1, next_attempt_at = now() + ? * interval '1 millisecond'
         where id in (
           select id from pending_index_removals
           where created_at <= now() - ? * interval '1 millisecond' and next_attempt_at <= now()
           order by id limit ? for update skip locked)
         returning id, collection_id, chunk_keys, attempts`,
        [CLAIM_MS, this.graceMs, RECORDS_PER_SWEEP],
      );
      let completed = 0;
      for (const removal of owed) {
        if (await this.perform(removal)) completed += 1;
      }
      return completed;
    } finally {
      this.sweeping = false;
    }
  }

  private async perform(removal: OwedRemoval): Promise<boolean> {
    const id = Number(removal.id);
    try {
      if (removal.chunk_keys === null) {
        await dropCollectionIndexes(this.runtime.indexes, { id: removal.collection_id });
      } else if (await this.collectionExists(removal.collection_id)) {
        // A deleted collection's entries all go with it (its own record, or its drop that succeeded).
        await removeFromIndexes(this.runtime.indexes, removal.collection_id, removal.chunk_keys.map(Number));
        await this.runtime.recordWrite(removal.collection_id);
      }
      await settleIndexRemoval(this.runtime.sql, id);
      return true;
    } catch (error) {
      const retryDelayMs = Math.min(this.intervalMs * 2 ** (removal.attempts - 1), MAX_RETRY_DELAY_MS);
      this.logger.warn(
        { err: error, pendingIndexRemovalId: id, collectionId: removal.collection_id, attempts: removal.attempts, retryDelayMs },
        'could not remove the search-index entries of deleted rows; retried later',
      );
      // Left unrecorded when the database is away: the claim expires after CLAIM_MS all the same.
      await this.runtime.sql(
        "update pending_index_removals set last_error = ?, next_attempt_at = now() + ? * interval '1 millisecond' where id = ?",
        [error instanceof Error ? error.message : String(error), retryDelayMs, id],
      ).catch(() => undefined);
      return false;
    }
  }

  private async collectionExists(collectionId: string): Promise<boolean> {
    const [row] = await this.runtime.sql('select 1 from collections where id = ?', [collectionId]);
    return row !== undefined;
  }
}
