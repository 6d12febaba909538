/**
 * BM25 over PostgreSQL tables (migration 0002): one `keyword_postings` row per (chunk, term) with
 * the chunk's length in the row, and per-(collection, tenant) `keyword_stats` (chunk count, total
 * length) changed in the same transaction as the postings. Document frequencies are counted at
 * query time from the postings of the query's terms, so they are exact and cannot drift. The
 * writes are in sql-keyword-writes.ts.
 *
 * Measured in PGlite (../shared/STACK.md): keeping the length in each posting row instead of
 * joining a per-chunk table makes scoring 5x faster (7.7 ms against 37 ms at 20k chunks).
 */
import type { SqlRunner } from '../../plugins.js';
import { filterToSql } from '../filters/filter-to-sql.js';
import type { MetadataFilter } from '../filters/filter-types.js';
import {
  analyzeQuery,
  defaultKeywordB,
  defaultKeywordK1,
  tenantPartition,
  type KeywordHit,
  type KeywordIndex,
  type KeywordSearchRequest,
  type QueryTerm,
} from './keyword-index.js';
import { decodeKeys, encodePostingsSql, scorePartitionPostings, type PartitionPostings, type PostingSegment } from './encoded-postings.js';
import { addKeywordEntries, keywordWriteLockId, removeKeywordEntries } from './sql-keyword-writes.js';
import { TopHits } from './top-hits.js';
/**
 * Each (partition, query term)'s postings with the partition's statistics, scored in the service
 * (encoded-postings.ts): the term's packed postings (keyword-posting-packer.ts), the keys removed
 * from them since, and its postings not packed yet, aggregated into one bytea. One statement, so
 * all three come from one snapshot. A term's document frequency is the length of its list, so
 * statistics stay exact and cannot drift.
 *
 * The statement used to score in SQL: it sorted every posting by (chunk, term) so that sum() added
 * in a fixed order, then summed. With Cranfield's 225 questions over 70k chunks (its 1,400 documents
 * 50 times) on PostgreSQL, top 10, that took 105 ms p50 on one host; reading each list whole as one
 * aggregate and scoring here, 58 ms there. From packed postings, 14 ms against 56 ms from the rows
 * in one run (bench/quality/keyword-index-quality.ts --copies 50). The scores are now the memory
 * index's bit for bit (PostgreSQL's `ln` could differ from Math.log by an ulp).
 *
 * Each subquery names one (partition, term), so the indexes are used whole even before ANALYZE has
 * run (PGlite has no autovacuum). Given `term = any(...)` instead, the planner filtered the
 * collection's every posting.
 */
function postingListsStatement(request: KeywordSearchRequest, queryTerms: QueryTerm[]): { sql: string; params: unknown[] } {
  const params: unknown[] = [queryTerms.map(({ term }) => term), request.collectionId];
  if (request.tenant !== undefined) params.push(tenantPartition(request.tenant));
  params.push(request.collectionId, request.collectionId, request.collectionId);
  const sameTerm = (table: string) =>
    `${table}.collection_id = ?::uuid and ${table}.tenant = partitions.tenant and ${table}.term = query_terms.term`;
  const sql = `
    with query_terms as (
      select term, position from unnest(?::text[]) with ordinality as query_term (term, position)
    ), partitions as (
      select tenant, chunk_count, total_length from keyword_stats
      where collection_id = ?::uuid and chunk_count > 0 ${request.tenant === undefined ? '' : 'and tenant = ?'}
    )
    select partitions.tenant, partitions.chunk_count, partitions.total_length, query_terms.position,
      (select packed.postings from keyword_packed_postings packed where ${sameTerm('packed')}) as packed,
      (select string_agg(int8send(removal.chunk_key), ''::bytea) from keyword_packed_removals removal where ${sameTerm('removal')}) as removed,
      (select ${encodePostingsSql} from keyword_postings loose where ${sameTerm('loose')} and not loose.packed) as loose
    from partitions cross join query_terms
    order by partitions.tenant, query_terms.position`;
  return { sql, params };
}

interface PostingListRow {
  tenant: string;
  chunk_count: number | string;
  total_length: number | string;
  position: number | string;
  packed: Uint8Array | null;
  removed: Uint8Array | null;
  loose: Uint8Array | null;
}

/** Rows grouped by partition, each partition's lists in query-term order (the statement's order). */
function partitionsOf(rows: PostingListRow[], queryTerms: QueryTerm[]): PartitionPostings[] {
  const partitions = new Map<string, PartitionPostings>();
  for (const row of rows) {
    if (!row.packed && !row.loose) continue;
    let partition = partitions.get(row.tenant);
    if (!partition) {
      partition = { chunkCount: Number(row.chunk_count), totalLength: Number(row.total_length), lists: [] };
      partitions.set(row.tenant, partition);
    }
    const segments: PostingSegment[] = [];
    if (row.packed) segments.push({ postings: row.packed, excludedKeys: row.removed ? decodeKeys(row.removed) : undefined });
    if (row.loose) segments.push({ postings: row.loose });
    partition.lists.push({ queryFrequency: queryTerms[Number(row.position) - 1].frequency, segments });
  }
  return [...partitions.values()];
}

/**
 * Looking a candidate up by key costs about three times what scanning one of the collection's
 * chunks does (Cranfield over 70k chunks on PostgreSQL: about 50k candidates by key in 190 ms, the
 * collection's 70k chunks scanned with a filter in 95-120 ms). A scan the metadata index serves
 * (migration 0018) reads only the rows containing the filter's values, each at about a lookup's cost.
 */
const lookupCostInScannedRows = 3;

/**
 * The first `topK` of the scored chunks, best first, whose `chunks` row passes the metadata filter.
 * Candidates are looked up by key in rounds: topK * 4 first, so a filter most chunks pass costs one
 * small lookup; then twice as many as the pass rate so far says are still needed (at most 8 times
 * the last round). When the lookups still needed would cost more than scanning the collection's
 * chunks, the scan names every chunk that passes instead; with a filter the metadata index serves,
 * the scan reads only the rows it finds, about as many as the pass rate so far says pass, so a
 * filter few chunks pass is scanned after the first round. Against the statement that scored in SQL
 * and joined every scored chunk to `chunks`, on the 70k chunks above: a filter 2 % of chunks pass,
 * 55 against 238 ms p50; half of them, 55 against 230 ms; none, 121 against 41 ms (the old plan
 * found no passing chunk first and skipped the scoring). The scan through the index: see
 * bench/README.md "Metadata filters".
 */
async function filteredTopHits(
  sql: SqlRunner,
  request: KeywordSearchRequest & { filter: MetadataFilter },
  candidates: { keys: number[]; scores: number[] },
  chunkCount: number,
): Promise<KeywordHit[]> {
  const topK = Math.floor(request.topK);
  const condition = filterToSql(request.filter, 'chunk.metadata');
  const bestOf = (capacity: number, passes: (key: number) => boolean) => {
    const ranked = new TopHits(capacity);
    for (let index = 0; index < candidates.keys.length; index++) {
      const key = candidates.keys[index];
      if (ranked.admits(candidates.scores[index], key) && passes(key)) ranked.push(candidates.scores[index], key);
    }
    return ranked.sorted();
  };
  const hits: KeywordHit[] = [];
  let checked = 0;
  let passedCount = 0;
  let roundSize = topK * 4;
  let lookupsStillNeeded = Math.min(roundSize, candidates.keys.length);
  while (hits.length < topK && checked < candidates.keys.length) {
    // The pass rate so far, one pass added so that a first round none passed does not say none will.
    const passingEstimate = (chunkCount * (passedCount + 1)) / (checked + 1);
    const scanCost = condition.containment ? Math.min(chunkCount, passingEstimate * lookupCostInScannedRows) : chunkCount;
    if (lookupsStillNeeded * lookupCostInScannedRows > scanCost) {
      const rows = await sql<{ key: number | string }>(
        `select chunk.key from chunks chunk where chunk.collection_id = ?::uuid and ${condition.sql}`,
        [request.collectionId, ...condition.params],
      );
      const passing = new Set(rows.map((row) => Number(row.key)));
      return bestOf(topK, (key) => passing.has(key));
    }
    const round = bestOf(checked + roundSize, () => true).slice(checked);
    const rows = await sql<{ key: number | string }>(
      `select chunk.key from chunks chunk where chunk.key = any(?::bigint[]) and ${condition.sql}`,
      [round.map((hit) => hit.key), ...condition.params],
    );
    const passed = new Set(rows.map((row) => Number(row.key)));
    for (const hit of round) if (passed.has(hit.key) && hits.length < topK) hits.push(hit);
    checked += round.length;
    passedCount += passed.size;
    const remaining = candidates.keys.length - checked;
    lookupsStillNeeded = passedCount === 0 ? remaining : Math.min(remaining, ((topK - hits.length) * checked) / passedCount);
    roundSize = Math.min(roundSize * 8, Math.ceil(lookupsStillNeeded * 2));
  }
  return hits;
}

export function createSqlKeywordIndex(sql: SqlRunner): KeywordIndex {
  return {
    name: 'sql',

    add: (collectionId, entries) => addKeywordEntries(sql, collectionId, entries),

    remove: (collectionId, keys) => removeKeywordEntries(sql, collectionId, keys),

    /**
     * Counts the statistics again from the postings kept, and lets the postings kept be read as
     * rows: the packed values go whole, where removing by key would record a packed removal for
     * nearly every posting of the collection.
     */
    async clearDeletedRows(collectionId) {
      await sql.transaction(async (run) => {
        await run('select pg_advisory_xact_lock(?::bigint)', [keywordWriteLockId(collectionId)]);
        await run(
          `delete from keyword_postings posting where posting.collection_id = ?::uuid
           and not exists (select 1 from chunks chunk where chunk.collection_id = ?::uuid and chunk.key = posting.chunk_key)`,
          [collectionId, collectionId],
        );
        await run('delete from keyword_packed_postings where collection_id = ?::uuid', [collectionId]);
        await run('delete from keyword_packed_removals where collection_id = ?::uuid', [collectionId]);
        await run('update keyword_postings set packed = false where collection_id = ?::uuid and packed', [collectionId]);
        await run('delete from keyword_stats where collection_id = ?::uuid', [collectionId]);
        await run(
          `insert into keyword_stats (collection_id, tenant, chunk_count, total_length)
           select ?::uuid, tenant, count(*), sum(chunk_length)
           from (select tenant, chunk_key, max(chunk_length) as chunk_length from keyword_postings
                 where collection_id = ?::uuid group by tenant, chunk_key) as kept_chunks
           group by tenant order by tenant`,
          [collectionId, collectionId],
        );
      });
    },

    async dropCollection(collectionId) {
      await sql.transaction(async (run) => {
        for (const table of ['keyword_postings', 'keyword_packed_postings', 'keyword_packed_removals', 'keyword_stats']) {
          await run(`delete from ${table} where collection_id = ?::uuid`, [collectionId]);
        }
      });
    },

    async load() {
      // Nothing kept in memory: each search reads the postings from the database.
    },

    async search(request): Promise<KeywordHit[]> {
      const queryTerms = analyzeQuery(request.query);
      const topK = Math.floor(request.topK);
      if (queryTerms.length === 0 || !(topK >= 1)) return [];
      const statement = postingListsStatement(request, queryTerms);
      const rows = await sql<PostingListRow>(statement.sql, statement.params);
      const k1 = request.k1 ?? defaultKeywordK1;
      const b = request.b ?? defaultKeywordB;
      const allowedKeys = request.keys && new Set(request.keys);
      if (!request.filter) {
        const top = new TopHits(topK);
        for (const partition of partitionsOf(rows, queryTerms)) {
          scorePartitionPostings(partition, k1, b, (key, score) => {
            if (top.admits(score, key) && (!allowedKeys || allowedKeys.has(key))) top.push(score, key);
          });
        }
        return top.sorted();
      }
      const candidates = { keys: [] as number[], scores: [] as number[] };
      let chunkCount = 0;
      for (const partition of partitionsOf(rows, queryTerms)) {
        chunkCount += partition.chunkCount;
        scorePartitionPostings(partition, k1, b, (key, score) => {
          if (allowedKeys && !allowedKeys.has(key)) return;
          candidates.keys.push(key);
          candidates.scores.push(score);
        });
      }
      return filteredTopHits(sql, { ...request, filter: request.filter }, candidates, chunkCount);
    },

    async close() {
      // Nothing held: the SqlRunner belongs to the caller.
    },
  };
}
