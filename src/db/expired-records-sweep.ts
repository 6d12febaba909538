import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../concurrency/periodic-rounds.js';
import { IDEMPOTENCY_RETENTION_MS } from '../http/idempotency.js';
import type { SqlRunner } from '../plugins.js';
import { compactPastQueryDays, deleteQueryTextsBefore, QUERY_TEXTS_KEPT_DAYS } from '../search/query-daily-texts.js';
import { DAY_MS, utcDay, utcDayWindowStart } from '../usage/utc-day-window.js';

/** How often expired records are looked for. */
const ROUND_INTERVAL_MS = 3_600_000;
/**
 * Rows deleted a statement: on the embedded database each statement holds the one connection, so
 * queries go between batches instead of waiting out a deletion of millions of rows. Query events
 * are small and many; the other tables' rows (a stored response, a job's payload) can be large.
 */
const BATCH_ROWS = { query_events: 5_000, other: 1_000 } as const;

/** Finished ingestion jobs are kept this long after they finished, for an operator looking into one. */
const FINISHED_JOBS_KEPT_MS = DAY_MS;
/** Hourly query counts are read for the last 24 hours only (instance-stats.ts); a second day is margin. */
const QUERY_HOURS_KEPT_MS = 2 * DAY_MS;

export interface SweptRecords {
  sessions: number;
  idempotency_records: number;
  finished_jobs: number;
  query_events: number;
  query_texts: number;
  query_hours: number;
}

/**
 * Deletes, at start and hourly, what the service keeps only for a while:
 * - login sessions past their expiry;
 * - idempotency records past the 24 hours their responses are replayed;
 * - ingestion jobs a day after they finished (done or failed: the document holds its status and
 *   error);
 * - query events older than `queryEventsRetentionDays` (0: kept). Nothing reads them for analytics:
 *   their counts stay in the daily totals and the daily counts of each text (query-events.ts);
 * - the daily counts of query texts beyond each past day's most asked, and all of them after the
 *   longest analytics window (query-daily-texts.ts);
 * - hourly query counts older than two days.
 * None was deleted before 2026-12-01 (an expired session was refused, a record replaced only when
 * its key came again), so every login, every request with an `Idempotency-Key` (with its whole
 * response), every document ever ingested or reprocessed and every query (290 bytes with its
 * indexes for a 30-character query, measured on PostgreSQL) left a row for good.
 */
export class ExpiredRecordsSweep {
  private readonly rounds: PeriodicRounds;

  constructor(private readonly sql: SqlRunner, logger: FastifyBaseLogger, private readonly queryEventsRetentionDays: number) {
    this.rounds = new PeriodicRounds(async () => {
      const deleted = await this.sweep();
      if (Object.values(deleted).some((count) => count > 0)) logger.info(deleted, 'deleted expired records');
    }, { intervalMs: ROUND_INTERVAL_MS, logger, work: 'deleting expired records', firstRoundAtStart: true });
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }

  /** Deletes what has expired as of `now`; returns how many of each. */
  async sweep(now = new Date()): Promise<SweptRecords> {
    const ago = (ms: number) => new Date(now.getTime() - ms);
    return {
      sessions: await this.deleteInBatches('sessions', 'expires_at <= ?::timestamptz', now),
      idempotency_records: await this.deleteInBatches('idempotency_records', 'created_at < ?::timestamptz', ago(IDEMPOTENCY_RETENTION_MS)),
      finished_jobs: await this.deleteInBatches('jobs', "status in ('done', 'failed') and updated_at < ?::timestamptz", ago(FINISHED_JOBS_KEPT_MS)),
      query_events: this.queryEventsRetentionDays > 0
        ? await this.deleteInBatches('query_events', 'created_at < ?::timestamptz', ago(this.queryEventsRetentionDays * DAY_MS))
        : 0,
      query_texts: await compactPastQueryDays(this.sql, utcDay(now))
        + await deleteQueryTextsBefore(this.sql, utcDay(utcDayWindowStart(QUERY_TEXTS_KEPT_DAYS, now))),
      query_hours: await this.deleteQueryHoursBefore(ago(QUERY_HOURS_KEPT_MS)),
    };
  }

  /** A few rows a collection (two days' hours): one statement. */
  private async deleteQueryHoursBefore(before: Date): Promise<number> {
    const [result] = await this.sql<{ deleted: string | number }>(
      'with removed as (delete from query_hourly_totals where hour < ?::timestamptz returning 1) select count(*) as deleted from removed',
      [before.toISOString()],
    );
    return Number(result?.deleted ?? 0);
  }

  private async deleteInBatches(table: 'sessions' | 'idempotency_records' | 'jobs' | 'query_events', expired: string, before: Date): Promise<number> {
    const batchRows = table === 'query_events' ? BATCH_ROWS.query_events : BATCH_ROWS.other;
    let deleted = 0;
    for (;;) {
      const rows = await this.sql<{ id: string }>(
        `delete from ${table} where id in (select id from ${table} where ${expired} limit ${batchRows}) returning id`, [before.toISOString()],
      );
      deleted += rows.length;
      if (rows.length < batchRows) return deleted;
    }
  }
}
