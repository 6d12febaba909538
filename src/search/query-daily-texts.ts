import type { SqlRunner } from '../plugins.js';
import { LONGEST_WINDOW_DAYS } from '../usage/utc-day-window.js';

/**
 * A past day keeps, per collection, the texts of its 500 most asked queries and of its 500 most
 * asked zero-result queries. The lists over a window are then exact for every query that was among
 * them each day it was asked, which the 20 a list shows are unless a day's queries are spread over
 * more than 500 texts at least as frequent; what is cut is the long tail of texts asked once or
 * twice, the bulk of the rows. Today keeps every text, so its order is not decided early.
 */
export const QUERY_TEXTS_KEPT_PER_DAY = 500;

/** The longest analytics window: older days' texts are never read. */
export const QUERY_TEXTS_KEPT_DAYS = LONGEST_WINDOW_DAYS;

/** The texts of how many queries a list shows. */
const LISTED_QUERIES = 20;

export interface ListedQuery {
  query: string;
  count: number;
}

export interface QueryLists {
  top: Array<ListedQuery & { avg_results: number }>;
  zeroResult: ListedQuery[];
}

/**
 * The most asked queries of a collection from `firstDay` (YYYY-MM-DD), with their average result
 * count (unrounded), and those most often answered with nothing. Texts that differ in case only are one query
 * ("koala", "Koala"), shown in the form asked most often (for the second list, most often with no
 * result). One statement: the window's texts are summed once for both lists and a form is looked
 * for only for the queries listed, instead of each list sorting every text of the window by its
 * lower case to pick each one's form (441 → 263 ms for a month of a million queries on PostgreSQL,
 * bench/README.md, "Analytics' query lists").
 */
export async function mostAskedQueryLists(sql: SqlRunner, collectionId: string, firstDay: string): Promise<QueryLists> {
  const rows = await sql<{ list: 'top' | 'zero'; query: string; count: string | number; avg_results: number | null }>(
    `with texts as (
       select query_text, lower(query_text) as key, sum(queries) as queries, sum(result_count_sum) as results, sum(zero_result_queries) as zero
         from query_daily_texts where collection_id = ? and day >= ?::date group by query_text
     ), listed as (
       (select 'top' as list, key, sum(queries) as count, sum(results)::float8 / sum(queries) as avg_results
          from texts group by key order by count desc, key limit ${LISTED_QUERIES})
       union all
       (select 'zero' as list, key, sum(zero) as count, null::float8 as avg_results
          from texts where zero > 0 group by key order by count desc, key limit ${LISTED_QUERIES})
     ), shown as (
       select distinct on (listed.list, listed.key) listed.list, texts.query_text as query, listed.count, listed.avg_results
         from listed join texts on texts.key = listed.key and (listed.list = 'top' or texts.zero > 0)
        order by listed.list, listed.key, case when listed.list = 'top' then texts.queries else texts.zero end desc, texts.query_text
     )
     select * from shown order by list, count desc, query`, [collectionId, firstDay],
  );
  const lists: QueryLists = { top: [], zeroResult: [] };
  for (const row of rows) {
    if (row.list === 'top') lists.top.push({ query: row.query, count: Number(row.count), avg_results: row.avg_results ?? 0 });
    else lists.zeroResult.push({ query: row.query, count: Number(row.count) });
  }
  return lists;
}

/**
 * Cuts every day before `today` (YYYY-MM-DD) whose texts have not been cut yet down to its most asked
 * ones, one collection's day a statement; returns how many text rows it deleted. A day's totals are
 * marked as not cut again when a late event of that day is recorded (query-events.ts).
 */
export async function compactPastQueryDays(sql: SqlRunner, today: string): Promise<number> {
  const days = await sql<{ collection_id: string; day: string }>(
    `select collection_id, to_char(day, 'YYYY-MM-DD') as day from query_daily_totals
      where not texts_compacted and day < ?::date order by day`, [today],
  );
  let deleted = 0;
  for (const { collection_id: collectionId, day } of days) {
    const [result] = await sql<{ deleted: string | number }>(
      `with keys as (
         select lower(query_text) as key, sum(queries) as queries, sum(zero_result_queries) as zero
           from query_daily_texts where collection_id = ? and day = ?::date group by 1
       ), kept as (
         (select key from keys order by queries desc, key limit ${QUERY_TEXTS_KEPT_PER_DAY})
         union
         (select key from keys where zero > 0 order by zero desc, key limit ${QUERY_TEXTS_KEPT_PER_DAY})
       ), removed as (
         delete from query_daily_texts where collection_id = ? and day = ?::date and lower(query_text) not in (select key from kept)
         returning 1
       ), marked as (
         update query_daily_totals set texts_compacted = true where collection_id = ? and day = ?::date
       )
       select count(*) as deleted from removed`, [collectionId, day, collectionId, day, collectionId, day],
    );
    deleted += Number(result?.deleted ?? 0);
  }
  return deleted;
}

/** Deletes the texts of the days before `firstKeptDay` (YYYY-MM-DD); returns how many rows. */
export async function deleteQueryTextsBefore(sql: SqlRunner, firstKeptDay: string): Promise<number> {
  // Collection by collection, so each one's old days are a range of the key: through the daily
  // totals (kept for good) the lookups grew by one a collection a day.
  const [result] = await sql<{ deleted: string | number }>(
    `with removed as (
       delete from query_daily_texts as texts using collections
        where texts.collection_id = collections.id and texts.day < ?::date returning 1
     )
     select count(*) as deleted from removed`, [firstKeptDay],
  );
  return Number(result?.deleted ?? 0);
}
