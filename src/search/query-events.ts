import { PeriodicWriter } from '../db/periodic-writer.js';
import type { SqlRunner } from '../plugins.js';

export interface QueryEvent {
  collectionId: string;
  query: string;
  searchMode: string;
  resultCount: number;
  latencyMs: number;
  cached: boolean;
  at: Date;
}

/** Half of a UTF-16 surrogate pair without its other half. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Events kept while the database cannot take them; older ones are dropped beyond this. */
const MAX_PENDING_EVENTS = 10_000;

/**
 * Records queries for analytics without a write on the query path: events are buffered and
 * inserted together once a second (and before analytics are read, and at shutdown), and added to
 * their collection's totals of the day in the same statement (migration 0021): the events
 * themselves are deleted after `QUERY_EVENTS_RETENTION_DAYS` (expired-records-sweep.ts), the
 * totals are kept.
 */
export class QueryEventRecorder extends PeriodicWriter {
  private buffer: QueryEvent[] = [];

  constructor(private readonly sql: SqlRunner, onError: (error: unknown) => void) {
    super(1000, onError);
  }

  record(event: QueryEvent): void {
    // jsonb refuses NUL and half of a surrogate pair (a cut emoji): one such query would make every
    // later batch fail, since a failed batch is kept for the next write.
    const query = event.query.slice(0, 2000).replace(LONE_SURROGATE, '\uFFFD').replaceAll('\u0000', '');
    this.buffer.push({ ...event, query });
  }

  protected async write(): Promise<void> {
    if (this.buffer.length === 0) return;
    const events = this.buffer;
    this.buffer = [];
    try {
      await this.sql(
        // The collections are locked (for key share) while the events are inserted: an existence check
        // alone let a collection deleted by a transaction in flight through, and its foreign key then
        // refused the whole batch. The lock waits for that transaction; a deleted row is then skipped.
        `with input as (
           select * from jsonb_to_recordset(?::jsonb)
             as r(collection_id uuid, query text, search_mode text, result_count int, latency_ms float8, cached boolean, created_at timestamptz)
         ), live_collections as (
           select id from collections where id in (select collection_id from input) for key share
         ), recorded as (
           insert into query_events (id, collection_id, query, search_mode, result_count, latency_ms, cached, created_at)
           select gen_random_uuid(), r.collection_id, r.query, r.search_mode, r.result_count, r.latency_ms, r.cached, r.created_at
           from input r where r.collection_id in (select id from live_collections)
           returning collection_id, result_count, latency_ms, cached, created_at
         )
         insert into query_daily_totals as totals (collection_id, day, queries, latency_ms_sum, zero_result_queries, cached_queries)
         select collection_id, (created_at at time zone 'UTC')::date, count(*), sum(latency_ms),
                count(*) filter (where result_count = 0), count(*) filter (where cached)
           from recorded group by 1, 2
         on conflict (collection_id, day) do update set
           queries = totals.queries + excluded.queries, latency_ms_sum = totals.latency_ms_sum + excluded.latency_ms_sum,
           zero_result_queries = totals.zero_result_queries + excluded.zero_result_queries,
           cached_queries = totals.cached_queries + excluded.cached_queries`,
        [JSON.stringify(events.map((event) => ({
          collection_id: event.collectionId, query: event.query, search_mode: event.searchMode,
          result_count: event.resultCount, latency_ms: event.latencyMs, cached: event.cached, created_at: event.at.toISOString(),
        })))],
      );
    } catch (error) {
      // Kept for the next write; while the database stays away only the newest are kept (bounded memory).
      this.buffer = [...events, ...this.buffer].slice(-MAX_PENDING_EVENTS);
      throw error;
    }
  }
}
