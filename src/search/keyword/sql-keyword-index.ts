/**
 * BM25 over PostgreSQL tables (migration 0002): one `keyword_postings` row per (chunk, term) with
 * the chunk's length in the row, and per-(collection, tenant) `keyword_stats` (chunk count, total
 * length) changed in the same transaction as the postings. Document frequencies are counted at
 * query time from the postings of the query's terms, so they are exact and cannot drift.
 *
 * Measured in PGlite (../shared/STACK.md): keeping the length in each posting row instead of
 * joining a per-chunk table makes scoring 5x faster (7.7 ms against 37 ms at 20k chunks).
 */
import type { SqlRunner } from '../../plugins.js';
import { filterToSql } from '../filters/filter-to-sql.js';
import {
  analyzeChunk,
  analyzeQuery,
  defaultKeywordB,
  defaultKeywordK1,
  tenantPartition,
  type KeywordEntry,
  type KeywordHit,
  type KeywordIndex,
  type KeywordSearchRequest,
  type QueryTerm,
} from './keyword-index.js';

type Statement = Parameters<Parameters<SqlRunner['transaction']>[0]>[0];

/**
 * A chunk without terms (empty, or stop words only) still counts in its partition's chunk count,
 * as in the reference script. It gets one posting under the empty term (which no query contains)
 * so that replacing or removing it finds its tenant and fixes the statistics.
 */
const emptyChunkTerm = '';

/**
 * Rows per INSERT ... SELECT FROM unnest(...) statement: ~10 array literals of ~200 kB each, well
 * under any parameter limit. Postings per transaction: PGlite ingests ~50k postings/s and blocks
 * every other query during a transaction, so one transaction holds it for ~0.4 s at most.
 */
const postingsPerStatement = 10_000;
const postingsPerTransaction = 20_000;
const keysPerRemoval = 5_000;

interface PostingColumns {
  tenants: string[];
  terms: string[];
  chunkKeys: number[];
  termFrequencies: number[];
  chunkLengths: number[];
}

interface IngestBatch {
  keys: number[];
  postings: PostingColumns;
  /** Partition → chunks and total length added. */
  added: Map<string, { chunkCount: number; totalLength: number }>;
}

function emptyBatch(): IngestBatch {
  return { keys: [], postings: { tenants: [], terms: [], chunkKeys: [], termFrequencies: [], chunkLengths: [] }, added: new Map() };
}

function addToBatch(batch: IngestBatch, entry: KeywordEntry): void {
  const partition = tenantPartition(entry.tenant);
  const { termFrequencies, length } = analyzeChunk(entry.text);
  const postings = batch.postings;
  const push = (term: string, termFrequency: number) => {
    postings.tenants.push(partition);
    postings.terms.push(term);
    postings.chunkKeys.push(entry.key);
    postings.termFrequencies.push(termFrequency);
    postings.chunkLengths.push(length);
  };
  if (termFrequencies.size === 0) push(emptyChunkTerm, 0);
  for (const [term, termFrequency] of termFrequencies) push(term, termFrequency);
  batch.keys.push(entry.key);
  const totals = batch.added.get(partition) ?? { chunkCount: 0, totalLength: 0 };
  totals.chunkCount += 1;
  totals.totalLength += length;
  batch.added.set(partition, totals);
}

/**
 * Deletes the postings of `keys` and applies the net change to each partition's statistics:
 * minus the chunks removed (their tenant and length read back from the deleted rows), plus
 * `added`. Rows are upserted in tenant order so concurrent writers lock them in the same order.
 */
async function replaceStatistics(
  run: Statement,
  collectionId: string,
  keys: number[],
  added: Map<string, { chunkCount: number; totalLength: number }>,
): Promise<void> {
  const partitions = [...added.keys()];
  await run(
    `with removed as (
       delete from keyword_postings where collection_id = ?::uuid and chunk_key = any(?::bigint[])
       returning tenant, chunk_key, chunk_length
     ), removed_chunks as (
       select tenant, chunk_key, max(chunk_length) as chunk_length from removed group by tenant, chunk_key
     ), changes as (
       select tenant, -count(*) as chunk_count, -sum(chunk_length) as total_length from removed_chunks group by tenant
       union all
       select tenant, chunk_count, total_length
       from unnest(?::text[], ?::bigint[], ?::bigint[]) as added (tenant, chunk_count, total_length)
     )
     insert into keyword_stats (collection_id, tenant, chunk_count, total_length)
     select ?::uuid, tenant, sum(chunk_count)::bigint, sum(total_length)::bigint from changes group by tenant order by tenant
     on conflict (collection_id, tenant) do update
       set chunk_count = keyword_stats.chunk_count + excluded.chunk_count,
           total_length = keyword_stats.total_length + excluded.total_length`,
    [
      collectionId,
      keys,
      partitions,
      partitions.map((partition) => added.get(partition)!.chunkCount),
      partitions.map((partition) => added.get(partition)!.totalLength),
      collectionId,
    ],
  );
  await run('delete from keyword_stats where collection_id = ?::uuid and chunk_count <= 0', [collectionId]);
}

/**
 * The batch without the chunks whose rows are gone. Each chunk has at least one posting (the empty
 * term stands in for none), whose length and partition give its share of the statistics.
 */
function keepChunks(batch: IngestBatch, live: Set<number>): IngestBatch {
  const kept = emptyBatch();
  const { tenants, terms, chunkKeys, termFrequencies, chunkLengths } = batch.postings;
  for (let index = 0; index < chunkKeys.length; index++) {
    const key = chunkKeys[index];
    if (!live.has(key)) continue;
    const postings = kept.postings;
    postings.tenants.push(tenants[index]);
    postings.terms.push(terms[index]);
    postings.chunkKeys.push(key);
    postings.termFrequencies.push(termFrequencies[index]);
    postings.chunkLengths.push(chunkLengths[index]);
    if (kept.keys[kept.keys.length - 1] === key) continue;
    kept.keys.push(key);
    const totals = kept.added.get(tenants[index]) ?? { chunkCount: 0, totalLength: 0 };
    totals.chunkCount += 1;
    totals.totalLength += chunkLengths[index];
    kept.added.set(tenants[index], totals);
  }
  return kept;
}

/**
 * The keys among `keys` whose chunk rows exist, held with KEY SHARE until the transaction ends: a
 * deletion arriving meanwhile waits, then removes these postings with the rows' other entries
 * (document-removal.ts). SKIP LOCKED passes over rows a deletion holds already (FOR UPDATE), so
 * a write never waits for a deletion and the two cannot deadlock; such rows count as gone.
 */
async function liveChunkKeys(run: Statement, keys: number[]): Promise<Set<number>> {
  const rows = await run<{ key: string | number }>('select key from chunks where key = any(?::bigint[]) for key share skip locked', [keys]);
  return new Set(rows.map((row) => Number(row.key)));
}

async function insertPostings(run: Statement, collectionId: string, postings: PostingColumns): Promise<void> {
  for (let start = 0; start < postings.terms.length; start += postingsPerStatement) {
    const end = start + postingsPerStatement;
    await run(
      `insert into keyword_postings (collection_id, tenant, term, chunk_key, term_frequency, chunk_length)
       select ?::uuid, tenant, term, chunk_key, term_frequency, chunk_length
       from unnest(?::text[], ?::text[], ?::bigint[], ?::integer[], ?::integer[])
         as posting (tenant, term, chunk_key, term_frequency, chunk_length)`,
      [
        collectionId,
        postings.tenants.slice(start, end),
        postings.terms.slice(start, end),
        postings.chunkKeys.slice(start, end),
        postings.termFrequencies.slice(start, end),
        postings.chunkLengths.slice(start, end),
      ],
    );
  }
}

/**
 * Scores every chunk holding a query term in one statement. The arithmetic is bm25TermWeight's,
 * operation for operation, in float8 (`ln` may differ from V8's Math.log by an ulp).
 *
 * Plan notes, measured on Cranfield (110k postings): postings are fetched per (partition, term)
 * by a LATERAL subquery kept apart with `offset 0`, so the (collection_id, tenant, term) index is
 * used whole even before ANALYZE has run (PGlite has no autovacuum). Given `term = any(...)`
 * instead, the planner filtered the collection's every posting: 100-200 ms a query.
 *
 * Each (partition, term) gets its idf first, from a count of its postings (an index-only scan),
 * once per term; `term_weights` is materialized so that the logarithm is not inlined into every
 * posting's weight.
 *
 * A chunk's weights are added in query-term order, as the memory index adds them, so equal
 * inputs give bit-identical scores and ties stay ties. `sum()` adds in the order its input
 * arrives, and nothing else fixes that order: an unstable sort for a GroupAggregate, or a hash
 * join, mixes it (copies of one text then score apart in the last bit and ties break wrongly).
 * So the weights are sorted by (chunk, term position) before the sum, which PostgreSQL's manual
 * gives as the way to feed an aggregate in order; a CTE scan is never run by parallel workers,
 * so no partial sums run in another order either.
 *
 * Measured with Cranfield's 225 questions over 70k chunks (its 1,400 documents 50 times) on
 * PostgreSQL, top 10 (bench/quality/keyword-index-quality.ts --copies 50): 53 ms p50, 95 ms p95.
 * The statement before took 179 and 339 ms. It materialized the postings, counted them there,
 * joined them back to their counts, and gave each term its own filtered column to fix the order.
 * `sum(weight order by position)` would state the order in the aggregate itself. But PostgreSQL 15
 * sorts each chunk's group apart for it, which took 1.5x as long as the one sort here.
 */
function searchStatement(request: KeywordSearchRequest, queryTerms: QueryTerm[]): { sql: string; params: unknown[] } {
  const k1 = request.k1 ?? defaultKeywordK1;
  const b = request.b ?? defaultKeywordB;
  const params: unknown[] = [
    queryTerms.map(({ term }) => term),
    queryTerms.map(({ frequency }) => frequency),
    request.collectionId,
    ...(request.tenant === undefined ? [] : [tenantPartition(request.tenant)]),
    request.collectionId,
    k1,
    k1,
    b,
    b,
    request.collectionId,
  ];
  const filter = request.filter ? filterToSql(request.filter, 'chunk.metadata') : undefined;
  const filterJoin = filter ? `join chunks chunk on chunk.key = scored.chunk_key where ${filter.sql}` : '';
  if (filter) params.push(...filter.params);
  // Narrowed after scoring: document frequencies are counted over the whole partition's matches.
  const keysCondition = request.keys ? `${filter ? 'and' : 'where'} scored.chunk_key = any(?::bigint[])` : '';
  if (request.keys) params.push(request.keys);
  params.push(Math.floor(request.topK));
  const sql = `
    with query_terms as (
      select term, frequency, position
      from unnest(?::text[], ?::float8[]) with ordinality as query_term (term, frequency, position)
    ), partitions as (
      select tenant, chunk_count::float8 as chunk_count, total_length::float8 / chunk_count::float8 as average_length
      from keyword_stats where collection_id = ?::uuid and chunk_count > 0 ${request.tenant === undefined ? '' : 'and tenant = ?'}
    ), term_weights as materialized (
      select partitions.tenant, partitions.average_length, query_terms.term, query_terms.position, query_terms.frequency,
             ln(1 + (partitions.chunk_count - matching.document_frequency + 0.5) / (matching.document_frequency + 0.5)) as idf
      from partitions cross join query_terms cross join lateral (
        select count(*)::float8 as document_frequency from keyword_postings
        where collection_id = ?::uuid and tenant = partitions.tenant and term = query_terms.term
      ) matching
      where matching.document_frequency > 0
    ), weights as (
      select posting.chunk_key, term_weights.position, term_weights.frequency * (
          (term_weights.idf * posting.term_frequency * (?::float8 + 1))
          / (posting.term_frequency + ?::float8 * (1 - ?::float8 + (?::float8 * posting.chunk_length) / term_weights.average_length))
        ) as weight
      from term_weights cross join lateral (
        select chunk_key, term_frequency::float8 as term_frequency, chunk_length::float8 as chunk_length from keyword_postings
        where collection_id = ?::uuid and tenant = term_weights.tenant and term = term_weights.term
        offset 0
      ) posting
      order by posting.chunk_key, term_weights.position
    ), scored as (
      select chunk_key, sum(weight) as score from weights group by chunk_key
    )
    select scored.chunk_key as key, scored.score from scored ${filterJoin} ${keysCondition}
    order by scored.score desc, scored.chunk_key
    limit ?`;
  return { sql, params };
}

export function createSqlKeywordIndex(sql: SqlRunner): KeywordIndex {
  /**
   * Postings are written only for chunks whose rows exist (liveChunkKeys): a document deleted while
   * its chunks were indexed otherwise left postings, counted in the BM25 statistics and taking
   * places in top-k, until the ingestion's clean-up after the whole slice. The old postings of
   * every key of the batch are replaced all the same.
   */
  async function writeBatch(collectionId: string, batch: IngestBatch): Promise<void> {
    await sql.transaction(async (run) => {
      const live = await liveChunkKeys(run, batch.keys);
      const written = live.size === batch.keys.length ? batch : keepChunks(batch, live);
      await replaceStatistics(run, collectionId, batch.keys, written.added);
      await insertPostings(run, collectionId, written.postings);
    });
  }

  return {
    name: 'sql',

    async add(collectionId, entries) {
      const latestByKey = new Map<number, KeywordEntry>();
      for (const entry of entries) latestByKey.set(entry.key, entry);
      let batch = emptyBatch();
      for (const entry of latestByKey.values()) {
        addToBatch(batch, entry);
        if (batch.postings.terms.length >= postingsPerTransaction) {
          await writeBatch(collectionId, batch);
          batch = emptyBatch();
        }
      }
      if (batch.keys.length > 0) await writeBatch(collectionId, batch);
    },

    async remove(collectionId, keys) {
      const unique = [...new Set(keys)];
      for (let start = 0; start < unique.length; start += keysPerRemoval) {
        const slice = unique.slice(start, start + keysPerRemoval);
        await sql.transaction((run) => replaceStatistics(run, collectionId, slice, new Map()));
      }
    },

    async dropCollection(collectionId) {
      await sql.transaction(async (run) => {
        await run('delete from keyword_postings where collection_id = ?::uuid', [collectionId]);
        await run('delete from keyword_stats where collection_id = ?::uuid', [collectionId]);
      });
    },

    async load() {
      // Nothing kept in memory: each search reads the postings from the database.
    },

    async search(request): Promise<KeywordHit[]> {
      const queryTerms = analyzeQuery(request.query);
      if (queryTerms.length === 0 || !(request.topK >= 1)) return [];
      const statement = searchStatement(request, queryTerms);
      const rows = await sql<{ key: number | string; score: number }>(statement.sql, statement.params);
      // PostgreSQL returns bigint as a string, PGlite as a number.
      return rows.map((row) => ({ key: Number(row.key), score: Number(row.score) }));
    },

    async close() {
      // Nothing held: the SqlRunner belongs to the caller.
    },
  };
}
