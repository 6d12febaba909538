import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../concurrency/periodic-rounds.js';
import { IDEMPOTENCY_RETENTION_MS } from '../http/idempotency.js';
import type { SqlRunner } from '../plugins.js';

/** How often expired records are looked for. */
const ROUND_INTERVAL_MS = 3_600_000;
/** Rows deleted a statement, so queries waiting for the embedded database's one connection go between. */
const BATCH_ROWS = 1_000;

/** Finished ingestion jobs are kept this long after they finished, for an operator looking into one. */
const FINISHED_JOBS_KEPT_MS = 24 * 3_600_000;

/**
 * Deletes login sessions past their expiry, idempotency records past the 24 hours their responses
 * are replayed, and ingestion jobs a day after they finished (done or failed: the document holds
 * its status and error), at start and hourly. None was deleted before 2026-12-01 (an expired
 * session was refused, a record replaced only when its key came again), so every login, every
 * request with an `Idempotency-Key` (with its whole response) and every document ever ingested or
 * reprocessed, deleted since or not, left a row for good.
 */
export class ExpiredRecordsSweep {
  private readonly rounds: PeriodicRounds;

  constructor(private readonly sql: SqlRunner, logger: FastifyBaseLogger) {
    this.rounds = new PeriodicRounds(async () => {
      const deleted = await this.sweep();
      if (deleted.sessions + deleted.idempotency_records + deleted.finished_jobs > 0) logger.info(deleted, 'deleted expired sessions, idempotency records and finished jobs');
    }, { intervalMs: ROUND_INTERVAL_MS, logger, work: 'deleting expired sessions, idempotency records and finished jobs', firstRoundAtStart: true });
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }

  /** Deletes what has expired as of `now`; returns how many of each. */
  async sweep(now = new Date()): Promise<{ sessions: number; idempotency_records: number; finished_jobs: number }> {
    return {
      sessions: await this.deleteInBatches('sessions', 'expires_at <= ?::timestamptz', now),
      idempotency_records: await this.deleteInBatches('idempotency_records', 'created_at < ?::timestamptz', new Date(now.getTime() - IDEMPOTENCY_RETENTION_MS)),
      finished_jobs: await this.deleteInBatches('jobs', "status in ('done', 'failed') and updated_at < ?::timestamptz", new Date(now.getTime() - FINISHED_JOBS_KEPT_MS)),
    };
  }

  private async deleteInBatches(table: 'sessions' | 'idempotency_records' | 'jobs', expired: string, at: Date): Promise<number> {
    let deleted = 0;
    for (;;) {
      const rows = await this.sql<{ id: string }>(
        `delete from ${table} where id in (select id from ${table} where ${expired} limit ${BATCH_ROWS}) returning id`, [at.toISOString()],
      );
      deleted += rows.length;
      if (rows.length < BATCH_ROWS) return deleted;
    }
  }
}
