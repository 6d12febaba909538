import { Migration } from '@mikro-orm/migrations';

/**
 * Query counts per collection and UTC day, kept beside the query events: analytics and the usage
 * report read their counts, latency and per-day series here, and query events older than
 * `QUERY_EVENTS_RETENTION_DAYS` are deleted (expired-records-sweep.ts), so the events table no
 * longer grows by a row a query for as long as the service runs. The totals start from the events
 * there are. `query_events (created_at)`: the retention's deletions and the last day's count in
 * `GET /v1/stats` read a time range across collections.
 */
export class Migration0021QueryDailyTotals extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table query_daily_totals (
        collection_id uuid not null references collections (id) on delete cascade,
        day date not null,
        queries bigint not null,
        latency_ms_sum double precision not null,
        zero_result_queries bigint not null,
        cached_queries bigint not null,
        primary key (collection_id, day)
      )`);
    this.addSql(`
      insert into query_daily_totals (collection_id, day, queries, latency_ms_sum, zero_result_queries, cached_queries)
      select collection_id, (created_at at time zone 'UTC')::date, count(*), sum(latency_ms),
             count(*) filter (where result_count = 0), count(*) filter (where cached)
        from query_events where collection_id is not null group by 1, 2`);
    this.addSql('create index query_events_created_index on query_events (created_at)');
  }
}
