/**
 * Index entries of chunk rows that are gone. pgvector and the SQL keyword index write none for a
 * row deleted before their write or being deleted during it (held by the deletion's transaction):
 * a document deleted while its chunks were indexed left orphan vectors and postings until the
 * ingestion's clean-up after the whole slice, ~14 s for 4,096 chunks on PostgreSQL, and a semantic
 * top_k of 10 answered with 1 result meanwhile. The clean-up itself (removeEntriesOfDeletedRows)
 * moves the collection's write version, so that the short answers cached meanwhile are not served.
 * pgvector and the SQL index on PGlite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t, { type Test } from 'tap';
import { pgvectorStorePlugin } from '../../plugins/vector-store/pgvector/index.js';
import { openDatabase } from '../../src/db/database.js';
import { CollectionDirectory } from '../../src/collections/collection-directory.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import type { SqlRunner, VectorRecord, VectorStore } from '../../src/plugins.js';
import type { KeywordIndex } from '../../src/search/keyword/keyword-index.js';
import { createSqlKeywordIndex } from '../../src/search/keyword/sql-keyword-index.js';
import { removeEntriesOfDeletedRows } from '../../src/search/search-indexes.js';
import { scratchDatabaseUrl, testBackends } from '../support/test-app.js';

const dimension = 4;

async function createCollection(sql: SqlRunner): Promise<string> {
  const id = randomUUID();
  await sql(
    `insert into collections (id, name, embedding_provider, embedding_model, dimension, chunk_size, chunk_overlap,
       chunk_strategy, default_top_k, default_min_score, default_search_mode, created_at, updated_at)
     values (?, ?, 'local', 'test', ?, 800, 100, 'recursive', 10, 0, 'semantic', now(), now())`,
    [id, `c_${id.slice(0, 8)}`, dimension],
  );
  return id;
}

/** Chunk rows of one collection, their keys in order. */
async function createChunks(sql: SqlRunner, collectionId: string, texts: string[]): Promise<number[]> {
  const rows = await sql<{ key: number | string }>(
    `insert into chunks (id, collection_id, chunk_index, text, metadata, tenant, created_at)
     select gen_random_uuid()::text, ?::uuid, position, text, '{}'::jsonb, null, now()
     from unnest(?::text[]) with ordinality as row(text, position) order by position returning key`,
    [collectionId, texts],
  );
  return rows.map((row) => Number(row.key)).sort((a, b) => a - b);
}

const vectorRecords = (collectionId: string, keys: number[]): VectorRecord[] => keys.map((key, index) => ({
  key, collectionId, documentId: null, embedding: Float32Array.from([1, index + 1, 1, 1]), metadata: {}, tenant: null,
}));

async function counts(sql: SqlRunner, collectionId: string) {
  const [row] = await sql<{ vectors: string | number; postings_chunks: string | number; counted: string | number | null; version: string | number }>(
    `select (select count(*) from pgvector_embeddings where collection_id = ?) as vectors,
            (select count(distinct chunk_key) from keyword_postings where collection_id = ?) as postings_chunks,
            (select sum(chunk_count) from keyword_stats where collection_id = ?) as counted,
            (select write_version from collections where id = ?) as version`,
    [collectionId, collectionId, collectionId, collectionId],
  );
  return { vectors: Number(row!.vectors), postingsChunks: Number(row!.postings_chunks), counted: Number(row!.counted ?? 0), version: Number(row!.version) };
}

/** Fails the test instead of hanging when `promise` waits for a lock it should not wait for. */
async function withinSeconds<T>(t: Test, seconds: number, promise: Promise<T>, what: string): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), seconds * 1000); });
  const outcome = await Promise.race([promise, late]);
  clearTimeout(timer);
  if (outcome === 'late') {
    t.fail(`${what} waited more than ${seconds} s`);
    return undefined;
  }
  t.pass(`${what} did not wait`);
  return outcome as T;
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const databaseUrl = backend === 'postgresql' ? await scratchDatabaseUrl(t, { migrated: true }) : undefined;
    const db = await openDatabase({ databaseUrl });
    t.teardown(() => db.close());
    const sql = createSqlRunner(db);
    const vectorStore: VectorStore = pgvectorStorePlugin.create({}, { sql });
    const keywordIndex: KeywordIndex = createSqlKeywordIndex(sql);
    const texts = ['capybara grazes by the river', 'capybara herds rest in the sun', 'the river runs by the capybara'];

    await t.test('no vector or posting is written for a chunk row deleted before the write', async (t) => {
      const collectionId = await createCollection(sql);
      await vectorStore.ensureCollection(collectionId, dimension);
      const keys = await createChunks(sql, collectionId, texts);
      await sql('delete from chunks where key = ?', [keys[1]]);
      await keywordIndex.add(collectionId, keys.map((key, index) => ({ key, text: texts[index]!, metadata: {}, tenant: null })));
      await vectorStore.upsert(vectorRecords(collectionId, keys));
      t.match(await counts(sql, collectionId), { vectors: 2, postingsChunks: 2, counted: 2 }, 'the two live chunks only, in both indexes and in BM25 statistics');
      const semantic = await vectorStore.search({ collectionId, embedding: Float32Array.from([1, 2, 1, 1]), topK: 3 });
      t.same(semantic.map((hit) => hit.key).sort(), [keys[0], keys[2]].sort(), 'semantic search finds the live chunks');
      const keyword = await keywordIndex.search({ collectionId, query: 'capybara', topK: 3 });
      t.same(keyword.map((hit) => hit.key).sort(), [keys[0], keys[2]].sort(), 'keyword search finds the live chunks');
    });

    await t.test('a write replaces the old entries of a chunk whose row is gone by removing them', async (t) => {
      const collectionId = await createCollection(sql);
      const keys = await createChunks(sql, collectionId, texts);
      await keywordIndex.add(collectionId, keys.map((key, index) => ({ key, text: texts[index]!, metadata: {}, tenant: null })));
      await sql('delete from chunks where key = ?', [keys[0]]);
      await keywordIndex.add(collectionId, keys.map((key) => ({ key, text: 'capybara', metadata: {}, tenant: null })));
      t.match(await counts(sql, collectionId), { postingsChunks: 2, counted: 2 }, 'the deleted chunk is neither kept nor counted');
    });

    await t.test('the clean-up after an index write moves the write version when it removed entries', async (t) => {
      // The directory's own recordWrite, as the ingestion and raw-vector callers pass it.
      const directory = new CollectionDirectory(() => { throw new Error('not used by recordWrite'); });
      const recordWrite = (id: string) => directory.recordWrite(sql, id);
      const collectionId = await createCollection(sql);
      await vectorStore.ensureCollection(collectionId, dimension);
      const keys = await createChunks(sql, collectionId, texts);
      await keywordIndex.add(collectionId, keys.map((key, index) => ({ key, text: texts[index]!, metadata: {}, tenant: null })));
      await vectorStore.upsert(vectorRecords(collectionId, keys));
      const before = await counts(sql, collectionId);
      await removeEntriesOfDeletedRows(sql, { vectorStore, keywordIndex }, collectionId, keys, recordWrite);
      t.same(await counts(sql, collectionId), before, 'every row present: nothing removed, the version stays');
      // Deleted after the entries were written, as a deletion racing the write leaves it to the writer.
      await sql('delete from chunks where key = ?', [keys[2]]);
      await removeEntriesOfDeletedRows(sql, { vectorStore, keywordIndex }, collectionId, keys, recordWrite);
      t.same(await counts(sql, collectionId), { vectors: 2, postingsChunks: 2, counted: 2, version: before.version + 1 },
        'the entries of the deleted row are gone and the version moved on, so answers cached meanwhile are not served');
    });

    if (backend === 'postgresql') {
      await t.test('a chunk row whose deletion is in flight is passed over without waiting, and nothing of it stays', async (t) => {
        const collectionId = await createCollection(sql);
        await vectorStore.ensureCollection(collectionId, dimension);
        const keys = await createChunks(sql, collectionId, texts);
        const deleter = new pg.Client({ connectionString: databaseUrl });
        await deleter.connect();
        t.teardown(() => deleter.end());
        await deleter.query('begin');
        await deleter.query('delete from chunks where key = $1', [keys[1]]);
        await withinSeconds(t, 5, keywordIndex.add(collectionId, keys.map((key, index) => ({ key, text: texts[index]!, metadata: {}, tenant: null }))), 'the keyword write');
        await withinSeconds(t, 5, vectorStore.upsert(vectorRecords(collectionId, keys)), 'the vector write');
        await deleter.query('commit');
        t.match(await counts(sql, collectionId), { vectors: 2, postingsChunks: 2, counted: 2 }, 'no entry of the deleted row');
      });
    }
  });
}
