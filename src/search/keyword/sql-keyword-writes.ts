/**
 * Writes of the SQL keyword index (sql-keyword-index.ts): postings of chunks added and removed, with
 * each (collection, tenant) partition's statistics changed in the same transaction, under the
 * collection's shared keyword write lock.
 */
import { advisoryLockId } from '../../concurrency/replica-key-locks.js';
import type { SqlRunner } from '../../plugins.js';
import { analyzeChunk, tenantPartition, type KeywordEntry } from './keyword-index.js';

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
 * The advisory lock over a collection's keyword tables. Every write of postings holds it shared for
 * its transaction, taken before any row lock; clearDeletedRows holds it alone, so the statistics it
 * counts again from the postings cannot miss a write under way. The packer holds it shared as well.
 */
export function keywordWriteLockId(collectionId: string): string {
  return advisoryLockId(`keyword-index:${collectionId}`).toString();
}

async function shareKeywordWriteLock(run: Statement, collectionId: string): Promise<void> {
  await run('select pg_advisory_xact_lock_shared(?::bigint)', [keywordWriteLockId(collectionId)]);
}

/**
 * Deletes the postings of `keys` and applies the net change to each partition's statistics:
 * minus the chunks removed (their tenant and length read back from the deleted rows), plus
 * `added`. Rows are upserted in tenant order so concurrent writers lock them in the same order. A
 * deleted posting that was packed is recorded as removed from its term's packed value. Every
 * change of postings goes through here and rewrites its partitions' statistics rows, even when
 * their counts come out the same: the packer tells from those rows whether anything was written
 * (keyword-posting-packer.ts, postingWritesFingerprint).
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
       returning tenant, term, chunk_key, chunk_length, packed
     ), packed_removals as (
       insert into keyword_packed_removals (collection_id, tenant, term, chunk_key)
       select ?::uuid, tenant, term, chunk_key from removed where packed
       on conflict do nothing
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
      collectionId,
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
 * Postings are written only for chunks whose rows exist (liveChunkKeys): a document deleted while
 * its chunks were indexed otherwise left postings, counted in the BM25 statistics and taking
 * places in top-k, until the ingestion's clean-up after the whole slice. The old postings of
 * every key of the batch are replaced all the same.
 */
async function writeBatch(sql: SqlRunner, collectionId: string, batch: IngestBatch): Promise<void> {
  await sql.transaction(async (run) => {
    await shareKeywordWriteLock(run, collectionId);
    const live = await liveChunkKeys(run, batch.keys);
    const written = live.size === batch.keys.length ? batch : keepChunks(batch, live);
    await replaceStatistics(run, collectionId, batch.keys, written.added);
    await insertPostings(run, collectionId, written.postings);
  });
}

/** Indexes `entries` (the last of a key wins), replacing the keys' earlier postings. */
export async function addKeywordEntries(sql: SqlRunner, collectionId: string, entries: KeywordEntry[]): Promise<void> {
  const latestByKey = new Map<number, KeywordEntry>();
  for (const entry of entries) latestByKey.set(entry.key, entry);
  let batch = emptyBatch();
  for (const entry of latestByKey.values()) {
    addToBatch(batch, entry);
    if (batch.postings.terms.length >= postingsPerTransaction) {
      await writeBatch(sql, collectionId, batch);
      batch = emptyBatch();
    }
  }
  if (batch.keys.length > 0) await writeBatch(sql, collectionId, batch);
}

/** Removes the postings of `keys` and their share of the statistics. */
export async function removeKeywordEntries(sql: SqlRunner, collectionId: string, keys: number[]): Promise<void> {
  const unique = [...new Set(keys)];
  for (let start = 0; start < unique.length; start += keysPerRemoval) {
    const slice = unique.slice(start, start + keysPerRemoval);
    await sql.transaction(async (run) => {
      await shareKeywordWriteLock(run, collectionId);
      await replaceStatistics(run, collectionId, slice, new Map());
    });
  }
}
