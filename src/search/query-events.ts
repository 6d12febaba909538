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

/**
 * The text a query is counted under: its runs of white space made one space, its ends trimmed, so
 * "storms \t ships " is "storms ships".
 */
const QUERY_TEXT = `btrim(regexp_replace(query, '\\s+', ' ', 'g'))`;

/** Events kept while the database cannot take them; older ones are dropped beyond this. */
const MAX_PENDING_EVENTS = 10_000;

/**
 * Records queries for analytics without a write on the query path: events are buffered and
 * inserted together once a second (and before analytics are read, and at shutdown), and added in
 * the same statement to their collection's totals of the day (migration 0021) and to the day's
 * count of their text (query-daily-texts.ts), which analytics read, and to the hour's count
 * (migration 0025), which `GET /v1/stats` reads. The events themselves are deleted after
 * `QUERY_EVENTS_RETENTION_DAYS` (expired-records-sweep.ts); a late event of a day already cut to
 * its most asked texts marks it to be cut again.
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
           returning collection_id, query, result_count, latency_ms, cached, created_at
         ), texts as (
           insert into query_daily_texts as texts (collection_id, day, query_hash, folded_hash, query_text, queries, result_count_sum, zero_result_queries)
           select collection_id, day, md5(query_text)::uuid, md5(lower(query_text))::uuid, query_text, count(*), sum(result_count),
                  count(*) filter (where result_count = 0)
             from (select collection_id, (created_at at time zone 'UTC')::date as day, ${QUERY_TEXT} as query_text, result_count from recorded) as asked
            group by collection_id, day, query_text
           on conflict (collection_id, day, query_hash) do update set
             queries = texts.queries + excluded.queries, result_count_sum = texts.result_count_sum + excluded.result_count_sum,
             zero_result_queries = texts.zero_result_queries + excluded.zero_result_queries
         ), hours as (
           insert into query_hourly_totals as hours (collection_id, hour, queries)
           select collection_id, date_trunc('hour', created_at, 'UTC'), count(*) from recorded group by 1, 2
           on conflict (collection_id, hour) do update set queries = hours.queries + excluded.queries
         )
         insert into query_daily_totals as totals (collection_id, day, queries, latency_ms_sum, zero_result_queries, cached_queries)
         select collection_id, (created_at at time zone 'UTC')::date, count(*), sum(latency_ms),
                count(*) filter (where result_count = 0), count(*) filter (where cached)
           from recorded group by 1, 2
         on conflict (collection_id, day) do update set
           queries = totals.queries + excluded.queries, latency_ms_sum = totals.latency_ms_sum + excluded.latency_ms_sum,
           zero_result_queries = totals.zero_result_queries + excluded.zero_result_queries,
           cached_queries = totals.cached_queries + excluded.cached_queries, texts_compacted = false`,
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
