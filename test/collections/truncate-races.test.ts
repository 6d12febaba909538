/**
 * Truncate racing other replicas (probe on PostgreSQL with two replicas):
 * - two truncates of one collection at once: both drop the collection's HNSW index and make it
 *   again (pgvector does when a deletion empties a collection of 1,000 vectors or more), and the
 *   second `create index if not exists` was refused as a duplicate pg_class name: a 500. The other creation is made here by a client of the test, held open until the truncate's
 *   statement waits for it, so the moment is certain.
 * - a truncate while another replica deletes the collection: it answered 200 and made the deleted
 *   collection's index again, left for good (every vector insert paid its predicate). Now a 404, and
 *   what it made is removed. The deletion is run from inside the truncate, as it makes the indexes.
 * - the same deletion as a collection is created, or as ingestion of its first document makes its
 *   indexes: each made the deleted collection's index again. Now nothing of it is left.
 * - two truncates of one collection in one process (found when the two-replica test failed once in
 *   CI): the other's index creation, remembered between the drop forgetting creations and the drop
 *   itself, made this truncate's own creation a no-op, and the collection was left without an index.
 * - a chunk (and its vector) an ingestion committed while the truncate's deletion waited for its
 *   document: the chunk went by cascade, its key was not returned, and its vector stayed for good.
 * - rows written between a truncate's deletion of rows and its removal of index entries (a raw
 *   vector and a document through the other replica): the entries went by collection, theirs too,
 *   and they were found by neither keyword nor semantic search.
 * On PGlite (one process) the same truncate and deletion go through one app, with either store.
 */
import pg from 'pg';
import t, { type Test } from 'tap';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';
import { hnswIndexName } from '../../plugins/vector-store/pgvector/index.js';
import type { Config } from '../../src/config.js';
import { assertError } from '../support/assertions.js';
import { waitUntilBlockedBy } from '../support/lock-waits.js';
import { adminTestApp, buildTestApp, createTestCollection, multipartUpload, testBackends, uploadDocument, waitForIngestion, type Backend, type TestApp } from '../support/test-app.js';

async function indexesOf(app: TestApp, collectionId: string): Promise<string[]> {
  const rows = await app.services.sql<{ indexname: string }>(
    "select indexname from pg_indexes where tablename = 'pgvector_embeddings' and starts_with(indexname, ?)", [hnswIndexName(collectionId, 0).slice(0, -1)],
  );
  return rows.map((row) => row.indexname);
}

type Variant = { backend: Backend; overrides: Partial<Config> };
const variants = testBackends().flatMap((backend): Variant[] => backend === 'pglite'
  ? [{ backend, overrides: {} }, { backend, overrides: { vectorStore: 'pgvector' } }]
  : [{ backend, overrides: {} }]);

for (const { backend, overrides } of variants) {
  t.test(`${backend}, ${overrides.vectorStore ?? (backend === 'pglite' ? 'embedded' : 'pgvector')} store`, async (t) => {
    const first = await adminTestApp(t, backend, overrides);
    const { admin } = first;
    // Another replica on PostgreSQL; on PGlite the one process is both.
    let second: TestApp = first;
    if (backend === 'postgresql') {
      second = await buildTestApp(backend, overrides, { replicaOf: first.services.config.databaseUrl!, startWorkers: false });
      t.teardown(() => second.close());
    }
    const pgvector = first.services.indexes.vectorStore.name === 'pgvector';

    await t.test('a collection deleted by another replica while it is truncated: 404, and no index is made again for it', async (t) => {
      const collection = await createTestCollection(first.app, admin, { name: 'truncated-and-deleted' });
      const vectorStore = first.services.indexes.vectorStore;
      const ensureCollection = vectorStore.ensureCollection;
      t.teardown(() => Object.assign(vectorStore, { ensureCollection }));
      let deletion: { statusCode: number } | undefined;
      vectorStore.ensureCollection = async (collectionId, dimension) => {
        if (!deletion) deletion = await second.app.inject({ method: 'DELETE', url: '/v1/collections/truncated-and-deleted', headers: admin });
        return ensureCollection.call(vectorStore, collectionId, dimension);
      };
      const truncate = await first.app.inject({ method: 'POST', url: '/v1/collections/truncated-and-deleted/truncate', headers: admin });
      Object.assign(vectorStore, { ensureCollection });
      t.equal(deletion?.statusCode, 204, 'the collection was deleted as the truncate made its indexes again');
      assertError(t, truncate, 404, /^Collection truncated-and-deleted not found: it was deleted while this request was handled/, 'the truncate');
      if (pgvector) t.same(await indexesOf(first, collection.id), [], 'no HNSW index of the deleted collection');
      else t.match(await vectorStore.describe(collection.id), { vectors: 0, memory_index: { loaded: false } }, 'no in-memory index of the deleted collection');
      t.equal((await first.app.inject({ url: '/v1/collections/truncated-and-deleted', headers: admin })).statusCode, 404, 'the collection stays deleted');
    });

    /** Has the next ensureCollection of this store delete the collection through the other replica first. */
    function deleteOnNextEnsure(t: Test, name: string): { deletion(): { statusCode: number } | undefined } {
      const vectorStore = first.services.indexes.vectorStore;
      const ensureCollection = vectorStore.ensureCollection;
      t.teardown(() => Object.assign(vectorStore, { ensureCollection }));
      let deletion: { statusCode: number } | undefined;
      vectorStore.ensureCollection = async (collectionId, dimension) => {
        Object.assign(vectorStore, { ensureCollection });
        deletion = await second.app.inject({ method: 'DELETE', url: `/v1/collections/${name}`, headers: admin });
        return ensureCollection.call(vectorStore, collectionId, dimension);
      };
      return { deletion: () => deletion };
    }

    async function assertNoIndexOf(t: Test, collectionId: string): Promise<void> {
      if (pgvector) t.same(await indexesOf(first, collectionId), [], 'no HNSW index of the deleted collection');
      else t.match(await first.services.indexes.vectorStore.describe(collectionId), { vectors: 0, memory_index: { loaded: false } }, 'no in-memory index of the deleted collection');
    }

    await t.test('a collection deleted by another replica as it is created: no index is left for it', async (t) => {
      const race = deleteOnNextEnsure(t, 'created-and-deleted');
      const created = await first.app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'created-and-deleted' } });
      t.equal(created.statusCode, 201, created.body);
      t.equal(race.deletion()?.statusCode, 204, 'the collection was deleted as its indexes were made');
      await assertNoIndexOf(t, created.json<{ id: string }>().id);
    });

    await t.test('a collection deleted as ingestion of its document starts: its index is not made again', async (t) => {
      const collection = await createTestCollection(first.app, admin, { name: 'ingested-and-deleted' });
      const race = deleteOnNextEnsure(t, 'ingested-and-deleted');
      const body = multipartUpload([{ filename: 'a.txt', content: 'A document whose collection goes as it is ingested.', contentType: 'text/plain' }]);
      const upload = await first.app.inject({ method: 'POST', url: '/v1/collections/ingested-and-deleted/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(upload.statusCode, 202, upload.body);
      for (let waited = 0; race.deletion() === undefined || await first.services.jobs.pendingCount() > 0; waited += 20) {
        if (waited > 30_000) throw new Error('the ingestion job never settled');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      t.equal(race.deletion()?.statusCode, 204, 'the collection was deleted as ingestion made its indexes');
      await assertNoIndexOf(t, collection.id);
    });

    await t.test('rows written as a truncate removes index entries keep theirs', async (t) => {
      const name = 'truncated-under-writes';
      const collection = await createTestCollection(first.app, admin, { name });
      t.equal((await uploadDocument(first.app, admin, name, { filename: 'old.txt', content: 'Zeppelins drift over the old harbour at dawn.' })).statusCode, 202);
      await waitForIngestion(first.app, name, admin);
      const keywordIndex = first.services.indexes.keywordIndex;
      const clearDeletedRows = keywordIndex.clearDeletedRows;
      t.teardown(() => Object.assign(keywordIndex, { clearDeletedRows }));
      keywordIndex.clearDeletedRows = async (collectionId) => {
        Object.assign(keywordIndex, { clearDeletedRows });
        // The truncate has deleted the rows and not yet removed their entries: another replica writes.
        const lateText = 'Lighthouses guide the late ferries home.';
        const upsert = await second.app.inject({
          method: 'POST', url: `/v1/collections/${name}/vectors/upsert`, headers: admin,
          payload: { vectors: [{ id: 'late-vector', embedding: Array.from(hashedTextVector(lateText, collection.dimension)), text: lateText }] },
        });
        t.equal(upsert.statusCode, 200, upsert.body);
        t.equal((await uploadDocument(second.app, admin, name, { filename: 'late.txt', content: 'Glaciers carve the northern fjords slowly.' })).statusCode, 202);
        t.match(await waitForIngestion(first.app, name, admin), [{ filename: 'late.txt', status: 'ready' }]);
        return clearDeletedRows.call(keywordIndex, collectionId);
      };
      const truncate = await first.app.inject({ method: 'POST', url: `/v1/collections/${name}/truncate`, headers: admin });
      t.same(truncate.json(), { deleted_documents: 1 }, truncate.body);
      const found = async (query: string, searchMode: string) => {
        const answer = await first.app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload: { query, search_mode: searchMode, skip_cache: true } });
        t.equal(answer.statusCode, 200, answer.body);
        return answer.json<{ results: Array<{ id: string; document_filename: string | null }> }>().results;
      };
      for (const mode of ['keyword', 'semantic']) {
        t.match(await found('lighthouses guide ferries', mode), [{ id: 'late-vector' }], `${mode}: the raw vector written during the truncate`);
        t.match(await found('glaciers carve fjords', mode), [{ document_filename: 'late.txt' }], `${mode}: the document written during the truncate`);
      }
      t.same(await found('zeppelins', 'keyword'), [], 'the truncated document is gone from the keyword index');
      const [rows] = await first.services.sql<{ chunks: number }>('select count(*)::int as chunks from chunks where collection_id = ?', [collection.id]);
      t.equal((await first.services.indexes.vectorStore.describe(collection.id)).vectors, rows!.chunks, 'a vector for every chunk');
    });

    if (backend !== 'postgresql') return;

    await t.test('a chunk committed while the truncate waits for its document goes with its vector', async (t) => {
      const name = 'truncated-while-written';
      const collection = await createTestCollection(first.app, admin, { name });
      t.equal((await uploadDocument(first.app, admin, name, { filename: 'a.txt', content: 'Kelp forests sway in the cold current.' })).statusCode, 202);
      const [document] = await waitForIngestion(first.app, name, admin);
      const other = new pg.Client({ connectionString: first.services.config.databaseUrl! });
      await other.connect();
      t.teardown(() => other.end());
      const otherPid = (await other.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      // An ingestion writing one more chunk and its vector: it holds its document as chunk writes do.
      await other.query('begin');
      await other.query('select id from documents where id = $1 for key share', [document!.id]);
      const truncate = first.app.inject({ method: 'POST', url: `/v1/collections/${name}/truncate`, headers: admin });
      await waitUntilBlockedBy(first.services.sql, otherPid);
      const { rows: [chunk] } = await other.query(
        `insert into chunks (id, collection_id, document_id, chunk_index, text, metadata, created_at)
         values ('late-chunk', $1, $2, 1, 'Otters crack urchins on their bellies.', '{}', now()) returning key`, [collection.id, document!.id],
      );
      await other.query(
        `insert into pgvector_embeddings (chunk_key, collection_id, document_id, metadata, embedding)
         values ($1, $2, $3, '{}', $4::vector)`, [chunk.key, collection.id, document!.id, `[${Array.from(hashedTextVector('otters', collection.dimension)).join(',')}]`],
      );
      await other.query('commit');
      t.same((await truncate).json(), { deleted_documents: 1 });
      const [rows] = await first.services.sql<{ chunks: number }>('select count(*)::int as chunks from chunks where collection_id = ?', [collection.id]);
      t.equal(rows!.chunks, 0, 'no chunk left');
      t.equal(await first.services.indexes.vectorStore.count(collection.id), 0, 'no vector left');
    });

    await t.test('a truncate whose index another replica makes at the same moment: 200, one index', async (t) => {
      const collection = await createTestCollection(first.app, admin, { name: 'truncated-twice', dimension: 4 });
      const name = hnswIndexName(collection.id, collection.dimension);
      // Enough vectors that emptying the collection makes its index again (pgvector's delete).
      const vectors = Array.from({ length: 1_000 }, (_, index) => ({ id: `v${index}`, embedding: [1, index, 2, 3], text: `vector ${index}` }));
      const upsert = await first.app.inject({ method: 'POST', url: '/v1/collections/truncated-twice/vectors/upsert', headers: admin, payload: { vectors } });
      t.equal(upsert.statusCode, 200, upsert.body);
      const other = new pg.Client({ connectionString: first.services.config.databaseUrl! });
      await other.connect();
      t.teardown(() => other.end());
      const vectorStore = first.services.indexes.vectorStore;
      const ensureCollection = vectorStore.ensureCollection;
      t.teardown(() => Object.assign(vectorStore, { ensureCollection }));
      vectorStore.ensureCollection = async (collectionId, dimension) => {
        Object.assign(vectorStore, { ensureCollection });
        // The truncate dropped the index; the other replica makes it, and has not committed yet.
        await other.query('begin');
        await other.query(`create index ${name} on pgvector_embeddings using hnsw ((embedding::vector(${dimension})) vector_cosine_ops) where collection_id = '${collectionId}'`);
        const ours = ensureCollection.call(vectorStore, collectionId, dimension);
        // Returned below; until then its refusal (before the fix) must not count as unhandled.
        ours.catch(() => undefined);
        for (let waited = 0; ; waited += 20) {
          // Activity is read once per transaction unless told otherwise, and this client is in one.
          await other.query('select pg_stat_clear_snapshot()');
          const [waiting] = await other.query<{ count: string }>(
            `select count(*) as count from pg_stat_activity where wait_event_type = 'Lock' and query like '%create index if not exists ${name}%'`,
          ).then((result) => result.rows);
          if (Number(waiting!.count) > 0) break;
          if (waited > 10_000) throw new Error('the truncate never waited for the other creation');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await other.query('commit');
        return ours;
      };
      const truncate = await first.app.inject({ method: 'POST', url: '/v1/collections/truncated-twice/truncate', headers: admin });
      Object.assign(vectorStore, { ensureCollection });
      t.equal(truncate.statusCode, 200, truncate.body);
      t.same(await indexesOf(first, collection.id), [name], 'the one index');
    });

    if (pgvector) {
      await t.test('a truncate\'s drop racing another truncate\'s creation in one process: its own creation makes the index again', async (t) => {
        const collection = await createTestCollection(first.app, admin, { name: 'dropped-while-made' });
        const store = first.services.indexes.vectorStore;
        // The other creation is issued while the drop reads which indexes to drop.
        await Promise.all([store.dropCollection(collection.id), store.ensureCollection(collection.id, collection.dimension)]);
        await store.ensureCollection(collection.id, collection.dimension);
        t.same(await indexesOf(first, collection.id), [hnswIndexName(collection.id, collection.dimension)], 'the index is there');
      });
    }

    await t.test('truncates of one collection through two replicas at once all succeed', async (t) => {
      const collection = await createTestCollection(first.app, admin, { name: 'truncated-together' });
      for (let round = 0; round < 4; round++) {
        const answers = await Promise.all([first, second, first, second].map((replica) =>
          replica.app.inject({ method: 'POST', url: '/v1/collections/truncated-together/truncate', headers: admin })));
        t.same(answers.map((answer) => answer.statusCode), [200, 200, 200, 200], `round ${round}: ${answers.map((answer) => answer.body).join(' ')}`);
      }
      t.same(await indexesOf(first, collection.id), [hnswIndexName(collection.id, collection.dimension)], 'the one index');
    });
  });
}
