import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../concurrency/periodic-rounds.js';
import type { SqlRunner } from '../plugins.js';
import { DAY_MS } from '../usage/utc-day-window.js';

/** How often expired query events are looked for. */
const ROUND_INTERVAL_MS = 3_600_000;
/**
 * Events deleted a statement: on the embedded database each statement holds the one connection,
 * so queries go between batches instead of waiting out a deletion of millions of rows.
 */
const BATCH_ROWS = 5_000;

/**
 * Deletes query events older than `retentionDays` (0: none), at start and then hourly. Every
 * query adds an event, so without this the table grew by a row a query for as long as the service
 * ran (290 bytes with its indexes for a 30-character query, measured on PostgreSQL). Their counts stay in the daily totals
 * (query-events.ts), which analytics and the usage report read; only the top and zero-result
 * query lists need the events, and they cover the retention.
 */
export class QueryEventRetention {
  private readonly rounds: PeriodicRounds;

  constructor(private readonly sql: SqlRunner, logger: FastifyBaseLogger, private readonly retentionDays: number) {
    this.rounds = new PeriodicRounds(async () => {
      const deleted = await this.deleteExpired();
      if (deleted > 0) logger.info({ deleted, retention_days: retentionDays }, 'deleted query events past their retention');
    }, { intervalMs: retentionDays > 0 ? ROUND_INTERVAL_MS : 0, logger, work: 'deleting expired query events', firstRoundAtStart: true });
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }

  /** Deletes the events recorded more than `retentionDays` before `now`; returns how many. */
  async deleteExpired(now = new Date()): Promise<number> {
    if (this.retentionDays <= 0) return 0;
    const before = new Date(now.getTime() - this.retentionDays * DAY_MS).toISOString();
    let deleted = 0;
    for (;;) {
      const rows = await this.sql<{ id: string }>(
        `delete from query_events where id in (
           select id from query_events where created_at < ?::timestamptz order by created_at limit ${BATCH_ROWS}
         ) returning id`, [before],
      );
      deleted += rows.length;
      if (rows.length < BATCH_ROWS) return deleted;
    }
  }
}
