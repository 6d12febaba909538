import { Migration } from '@mikro-orm/migrations';

/**
 * Query counts per collection and UTC hour, for `GET /v1/stats`' `queries_last_24h`, which
 * counted the last day's query events on each request (366 ms on the embedded database with
 * 864,000 of them). It now sums the whole hours here and counts events in the one hour the day
 * starts in (instance-stats.ts). Hours older than two days are deleted (expired-records-sweep.ts).
 * The counts start from the events of the last 25 hours.
 */
export class Migration0025QueryHourlyTotals extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table query_hourly_totals (
        collection_id uuid not null references collections (id) on delete cascade,
        hour timestamptz not null,
        queries bigint not null,
        primary key (collection_id, hour)
      )`);
    this.addSql('create index query_hourly_totals_hour_index on query_hourly_totals (hour)');
    this.addSql(`
      insert into query_hourly_totals (collection_id, hour, queries)
      select collection_id, date_trunc('hour', created_at, 'UTC'), count(*)
        from query_events where collection_id is not null and created_at > now() - interval '25 hours' group by 1, 2`);
  }
}
