import { Migration } from '@mikro-orm/migrations';

/**
 * How often each query text was asked per collection and UTC day, which analytics' top and
 * zero-result query lists read (query-daily-texts.ts) instead of grouping every query event of the
 * window per request: with a million events in a 30-day window that took 4.6 s on PostgreSQL 15.
 * A text is its query with runs of white space made one space and its ends trimmed, case kept
 * (the lists show the form asked most often); `query_hash` keys it, since a 2,000-character text
 * can pass the size a B-tree entry may take. Past days keep their most asked texts only
 * (`texts_compacted` on the day's totals says it was done). Both start from the events there are.
 */
export class Migration0024QueryDailyTexts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table query_daily_texts (
        collection_id uuid not null references collections (id) on delete cascade,
        day date not null,
        query_hash uuid not null,
        query_text text not null,
        queries bigint not null,
        result_count_sum bigint not null,
        zero_result_queries bigint not null,
        primary key (collection_id, day, query_hash)
      )`);
    this.addSql('alter table query_daily_totals add column texts_compacted boolean not null default false');
    this.addSql(`
      insert into query_daily_texts (collection_id, day, query_hash, query_text, queries, result_count_sum, zero_result_queries)
      select collection_id, day, md5(query_text)::uuid, query_text, count(*), sum(result_count), count(*) filter (where result_count = 0)
        from (select collection_id, (created_at at time zone 'UTC')::date as day, btrim(regexp_replace(query, '\\s+', ' ', 'g')) as query_text, result_count
                from query_events where collection_id is not null) as events
       group by collection_id, day, query_text`);
  }
}
