import type { SqlRunner } from '../plugins.js';
import { LONGEST_WINDOW_DAYS } from '../usage/utc-day-window.js';

/**
 * A past day keeps, per collection, the texts of its 500 most asked queries and of its 500 most
 * asked zero-result queries (of the texts tied at either list's 500th place, those counted most in
 * that list on all the days kept). The lists over a window are then exact for every query that
 * was among them each day it was asked, which the 20 a list shows are unless a day's queries are
 * spread over more than 500 texts at least as frequent; what is cut is the long tail of texts
 * asked once or twice, the bulk of the rows. Today keeps every text, so its order is not decided
 * early.
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
 * result). One statement: the window's texts are summed once by their folded key for both lists,
 * and a form is looked for (through the folded key's index) only for the queries listed. Sums are
 * float8 (exact to 2^53), as PostgreSQL sums bigint in numeric, several times slower. Grouped by
 * `lower(query_text)` instead, a busy day's 179,000 texts took 1.0-1.2 s on the embedded database,
 * now 0.43-0.56 s (bench/README.md, "Analytics' query lists"). Ties at a list's end go by folded
 * key.
 */
export async function mostAskedQueryLists(sql: SqlRunner, collectionId: string, firstDay: string): Promise<QueryLists> {
  const rows = await sql<{ list: 'top' | 'zero'; query: string; count: string | number; avg_results: number | null }>(
    `with keys as (
       select folded_hash, sum(queries::float8) as queries, sum(result_count_sum::float8) as results, sum(zero_result_queries::float8) as zero
         from query_daily_texts where collection_id = ? and day >= ?::date group by folded_hash
     ), listed as (
       (select 'top' as list, folded_hash, queries as count, results / queries as avg_results
          from keys order by queries desc, folded_hash limit ${LISTED_QUERIES})
       union all
       (select 'zero' as list, folded_hash, zero as count, null::float8 as avg_results
          from keys where zero > 0 order by zero desc, folded_hash limit ${LISTED_QUERIES})
     ), forms as (
       select folded_hash, query_text, sum(queries) as queries, sum(zero_result_queries) as zero
         from query_daily_texts
        where collection_id = ? and folded_hash = any(array(select folded_hash from listed)) and day >= ?::date
        group by folded_hash, query_text
     ), shown as (
       select distinct on (listed.list, listed.folded_hash) listed.list, forms.query_text as query, listed.count, listed.avg_results
         from listed join forms on forms.folded_hash = listed.folded_hash and (listed.list = 'top' or forms.zero > 0)
        order by listed.list, listed.folded_hash, case when listed.list = 'top' then forms.queries else forms.zero end desc, forms.query_text
     )
     select list, query, count::bigint as count, avg_results from shown order by list, count desc, query`,
    [collectionId, firstDay, collectionId, firstDay],
  );
  const lists: QueryLists = { top: [], zeroResult: [] };
  for (const row of rows) {
    if (row.list === 'top') lists.top.push({ query: row.query, count: Number(row.count), avg_results: row.avg_results ?? 0 });
    else lists.zeroResult.push({ query: row.query, count: Number(row.count) });
  }
  return lists;
}

/**
 * Texts tied at a day's 500th place that are ranked by how often they were asked on every day kept;
 * beyond this many (a day of thousands of texts asked as often), by folded key alone, as each
 * ranking is an index lookup.
 */
const TIED_TEXTS_RANKED = 5_000;

/**
 * The CTEs that choose the folded keys one of a day's lists keeps (`<list>_kept`), from the CTE
 * `keys` (a day's sums by folded key): those counted above its 500th place, then of those tied at
 * it, the ones counted most on every day kept, then by key. `count` is the list's sum in `keys`,
 * `stored` the same count in `query_daily_texts`; the one `?` is the collection's id.
 */
function keptOfList(list: 'top' | 'zero', count: 'queries' | 'zero', stored: 'queries' | 'zero_result_queries'): string {
  return `${list}_boundary as (
       select coalesce((select ${count} from keys where ${count} > 0 order by ${count} desc offset ${QUERY_TEXTS_KEPT_PER_DAY - 1} limit 1), 0) as ${count}
     ), ${list}_above as (
       select keys.folded_hash from keys, ${list}_boundary as boundary where keys.${count} > boundary.${count}
     ), ${list}_tied as (
       select keys.folded_hash from keys, ${list}_boundary as boundary where keys.${count} > 0 and keys.${count} = boundary.${count}
     ), ${list}_kept as (
       (select folded_hash from ${list}_above)
       union all
       (select tied.folded_hash from ${list}_tied as tied
         order by case when (select count(*) from ${list}_tied) <= ${TIED_TEXTS_RANKED} then
                    (select sum(other.${stored}) from query_daily_texts other where other.collection_id = ? and other.folded_hash = tied.folded_hash)
                  end desc nulls last, tied.folded_hash
         limit ${QUERY_TEXTS_KEPT_PER_DAY} - (select count(*) from ${list}_above))
     )`;
}

/**
 * Cuts every day before `today` (YYYY-MM-DD) whose texts have not been cut yet down to the texts of
 * its most asked queries and of its most asked zero-result ones, one collection's day a statement;
 * returns how many text rows it deleted. Texts tied at either list's 500th place are kept in the
 * order of how often they were counted in that list on all the days kept, so that a query asked
 * often on other days keeps its count of a quiet day (a day's first hour, say, when every text was
 * asked once). A day's totals are marked as not cut again when a late event of that day is recorded
 * (query-events.ts).
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
         select folded_hash, sum(queries::float8) as queries, sum(zero_result_queries::float8) as zero
           from query_daily_texts where collection_id = ? and day = ?::date group by folded_hash
       ), ${keptOfList('top', 'queries', 'queries')}, ${keptOfList('zero', 'zero', 'zero_result_queries')}, kept as (
         select folded_hash from top_kept union all select folded_hash from zero_kept
       ), removed as (
         delete from query_daily_texts where collection_id = ? and day = ?::date and folded_hash not in (select folded_hash from kept)
         returning 1
       ), marked as (
         update query_daily_totals set texts_compacted = true where collection_id = ? and day = ?::date
       )
       select count(*) as deleted from removed`, [collectionId, day, collectionId, collectionId, collectionId, day, collectionId, day],
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
