/**
 * A deletion removes rows first and index entries after. When the index step failed (a lost
 * connection, a vector store refusing), the client got a 500 with the rows gone and the entries
 * kept for good: a retried DELETE is a 404, so nothing removed them (vectors of deleted chunks,
 * postings counted in the BM25 statistics, a deleted collection's HNSW index or in-memory graph).
 * The removal is now recorded with the rows' deletion, and the sweep performs it later.
 *
 * Each failure is injected by having the next call(s) of one index method throw. The sweep's own
 * timer is stopped and the sweep run by hand; records are backdated past its grace period, which
 * leaves young records to the request that wrote them.
 */
import t, { type Test } from 'tap';
import { hnswIndexName } from '../../plugins/vector-store/pgvector/index.js';
import type { Config } from '../../src/config.js';
import { PendingIndexRemovalSweep } from '../../src/search/pending-index-removals.js';
import { assertError } from '../support/assertions.js';
import { failNextCalls } from '../support/failing-calls.js';
import { logLines, type LogLine } from '../support/log-lines.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion, type Backend } from '../support/test-app.js';
import { waitUntil } from '../support/wait-until.js';

interface PendingRemoval {
  collection_id: string;
  chunk_keys: Array<string | number> | null;
  attempts: number;
  last_error: string | null;
}

/** Several chunks (chunk_size 400), each holding the document's own marker word. */
function documentText(marker: string): string {
  return Array.from({ length: 6 }, (_, index) =>
    `Section ${index} names ${marker}: cranes, containers and tides are scheduled together so the quay never idles; paragraph ${index} adds detail.`).join('\n\n');
}

type Variant = { backend: Backend; overrides: Partial<Config> };
const variants = testBackends().flatMap((backend): Variant[] => backend === 'pglite'
  ? [{ backend, overrides: {} }, { backend, overrides: { vectorStore: 'pgvector', keywordIndex: 'sql' } }]
  : [{ backend, overrides: {} }]);

for (const { backend, overrides } of variants) {
  const vectorStoreName = overrides.vectorStore ?? (backend === 'pglite' ? 'embedded' : 'pgvector');
  const keywordIndexName = overrides.keywordIndex ?? (backend === 'pglite' ? 'memory' : 'sql');
  t.test(`${backend}, ${vectorStoreName} store, ${keywordIndexName} keyword index`, async (t) => {
    const { lines, stream: logStream } = logLines();
    const { app, admin, services } = await adminTestApp(t, backend, overrides, { logStream });
    const { vectorStore, keywordIndex } = services.indexes;
    // Run by hand below, so that a sweep of the timer cannot take a record first.
    await services.indexRemovals.stop();

    const pending = async (collectionId: string) => services.sql<PendingRemoval>(
      'select collection_id, chunk_keys, attempts, last_error from pending_index_removals where collection_id = ?', [collectionId],
    );
    const pastGracePeriod = () => services.sql("update pending_index_removals set created_at = created_at - interval '1 hour'");
    const upload = async (t: Test, collection: string, marker: string) => {
      const body = multipartUpload([{ filename: `${marker}.txt`, content: documentText(marker), contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const found = async (collection: string, query: string, mode = 'keyword') => ((await app.inject({
      method: 'POST', url: `/v1/collections/${collection}/query`, headers: admin, payload: { query, search_mode: mode, top_k: 50, skip_cache: true },
    })).json().results as Array<{ document_id: string }>).map((result) => result.document_id);
    const stats = async (collection: string) => (await app.inject({ url: `/v1/collections/${collection}/stats`, headers: admin })).json() as { chunks: number; vectors: number };
    /** The SQL keyword index's postings of `keys`, and the chunks its BM25 statistics count. */
    const keywordTables = async (collectionId: string, keys: number[]) => {
      const [row] = await services.sql<{ postings: string | number; chunk_count: string | number | null }>(
        `select (select count(*) from keyword_postings where collection_id = ? and chunk_key = any(?::bigint[])) as postings,
           (select sum(chunk_count) from keyword_stats where collection_id = ?) as chunk_count`,
        [collectionId, keys, collectionId],
      );
      return { postings: Number(row!.postings), chunkCount: Number(row!.chunk_count ?? 0) };
    };
    const hnswIndexesOf = async (collectionId: string) => (await services.sql<{ indexname: string }>(
      "select indexname from pg_indexes where tablename = 'pgvector_embeddings' and starts_with(indexname, ?)", [hnswIndexName(collectionId, 0).slice(0, -1)],
    )).map((row) => row.indexname);

    for (const failing of ['keyword removal', 'vector delete'] as const) {
      await t.test(`a document delete whose ${failing} fails: 500, then the sweep removes its entries`, async (t) => {
        const name = `documents-${failing.replace(' ', '-')}`;
        const collection = await createTestCollection(app, admin, { name, chunk_size: 400, chunk_overlap: 0 });
        const deletedId = await upload(t, name, 'quillwort');
        const keptId = await upload(t, name, 'bladderwrack');
        await waitForIngestion(app, name, admin);
        const keys = (await services.sql<{ key: string | number }>('select key from chunks where document_id = ?', [deletedId])).map((row) => Number(row.key));
        t.ok(keys.length > 1, `the document has ${keys.length} chunks`);

        if (failing === 'keyword removal') failNextCalls(t, keywordIndex, 'remove');
        else failNextCalls(t, vectorStore, 'delete');
        const deleted = await app.inject({ method: 'DELETE', url: `/v1/collections/${name}/documents/${deletedId}`, headers: admin });
        t.equal(deleted.statusCode, 500, deleted.body);
        t.type(deleted.json().detail, 'string', 'the 500 has a detail');
        assertError(t, await app.inject({ url: `/v1/collections/${name}/documents/${deletedId}`, headers: admin }), 404, undefined, 'the document');
        const owed = await pending(collection.id);
        t.equal(owed.length, 1, 'one removal is owed');
        t.same(owed[0]!.chunk_keys!.map(Number).sort((a, b) => a - b), [...keys].sort((a, b) => a - b), 'of the deleted chunks');
        const before = await stats(name);
        t.ok(before.vectors > before.chunks, `the deleted chunks' vectors are still stored (${before.vectors} vectors, ${before.chunks} chunks)`);
        // The entries left rank the deleted chunks first (they hold both words): a query passes
        // over them to the chunks that are still there.
        const meanwhile = await found(name, 'quillwort cranes', failing === 'keyword removal' ? 'keyword' : 'semantic');
        t.equal(meanwhile.length, before.chunks, `meanwhile every remaining chunk is found (${meanwhile.length})`);
        t.same(new Set(meanwhile), new Set([keptId]), 'and nothing of the deleted document');

        t.equal(await services.indexRemovals.sweep(), 0, 'a sweep within the grace period leaves it to the request');
        t.equal((await pending(collection.id)).length, 1, 'still owed');
        await pastGracePeriod();
        t.equal(await services.indexRemovals.sweep(), 1, 'the sweep performs the removal');

        t.same(await pending(collection.id), [], 'nothing owed any more');
        const after = await stats(name);
        t.equal(after.vectors, after.chunks, `as many vectors as chunks (${after.chunks})`);
        t.same(await found(name, 'quillwort'), [], 'the deleted document is not found');
        t.ok((await found(name, 'bladderwrack')).includes(keptId), 'the other one is');
        if (keywordIndex.name === 'sql') {
          const keyword = await keywordTables(collection.id, keys);
          t.same(keyword, { postings: 0, chunkCount: after.chunks }, 'no postings of the deleted chunks; BM25 statistics count the remaining chunks');
        }
        // As when two replicas' sweeps, or a sweep and the request, perform the same removal.
        await services.sql("insert into pending_index_removals (collection_id, chunk_keys, created_at) values (?, ?::bigint[], now() - interval '1 hour')", [collection.id, keys]);
        t.equal(await services.indexRemovals.sweep(), 1, 'the same removal again');
        t.same(await stats(name), after, 'changes nothing');
        if (keywordIndex.name === 'sql') t.same(await keywordTables(collection.id, keys), { postings: 0, chunkCount: after.chunks }, 'BM25 statistics are not decremented twice');
        if (vectorStore.name === 'pgvector') {
          const [row] = await services.sql<{ count: string | number }>('select count(*) as count from pgvector_embeddings where chunk_key = any(?::bigint[])', [keys]);
          t.equal(Number(row!.count), 0, 'no pgvector rows of the deleted chunks');
        }
      });
    }

    await t.test('a collection delete whose index drop fails, and fails again in the first sweep: the next sweep drops them', async (t) => {
      const collection = await createTestCollection(app, admin, { name: 'dropped', chunk_size: 400, chunk_overlap: 0 });
      const id = await upload(t, 'dropped', 'saltmarsh');
      await waitForIngestion(app, 'dropped', admin);
      t.ok((await found('dropped', 'saltmarsh')).includes(id), 'searchable');

      failNextCalls(t, vectorStore, 'dropCollection', 2);
      const deleted = await app.inject({ method: 'DELETE', url: '/v1/collections/dropped', headers: admin });
      t.equal(deleted.statusCode, 500, deleted.body);
      t.type(deleted.json().detail, 'string', 'the 500 has a detail');
      assertError(t, await app.inject({ url: '/v1/collections/dropped', headers: admin }), 404, undefined, 'the collection');
      assertError(t, await app.inject({ method: 'DELETE', url: '/v1/collections/dropped', headers: admin }), 404, undefined, 'a retried delete');
      t.match(await pending(collection.id), [{ chunk_keys: null, attempts: 0 }], 'the removal of the whole collection is owed');
      t.ok(await vectorStore.count(collection.id) > 0, 'its vectors are still stored');
      if (vectorStore.name === 'pgvector') t.not((await hnswIndexesOf(collection.id)).length, 0, 'its HNSW index is still there');

      await pastGracePeriod();
      t.equal(await services.indexRemovals.sweep(), 0, 'the first sweep fails too');
      t.match(await pending(collection.id), [{ attempts: 1, last_error: /Connection terminated unexpectedly/ }], 'the failure is recorded');
      const warning = (lines as Array<LogLine & { collectionId?: string; retryDelayMs?: number }>)
        .find((line) => line.level === 40 && /could not remove the search-index entries/.test(line.msg ?? '') && line.collectionId === collection.id);
      t.ok(warning, 'and logged as a warning');
      // The first retry waits the sweep's interval (30 s), doubling from there up to an hour.
      t.equal(warning?.retryDelayMs, 30_000, 'naming the wait before the retry');
      const [due] = await services.sql<{ seconds: number | string }>(
        'select extract(epoch from next_attempt_at - now()) as seconds from pending_index_removals where collection_id = ?', [collection.id],
      );
      t.ok(Number(due!.seconds) > 0 && Number(due!.seconds) <= 30, `retried within 30 s (${Number(due!.seconds).toFixed(1)} s)`);
      t.equal(await services.indexRemovals.sweep(), 0, 'not retried at once');

      await services.sql('update pending_index_removals set next_attempt_at = now()');
      t.equal(await services.indexRemovals.sweep(), 1, 'the retry drops the indexes');
      t.same(await pending(collection.id), [], 'nothing owed any more');
      t.equal(await vectorStore.count(collection.id), 0, 'no vectors');
      if (vectorStore.name === 'pgvector') t.same(await hnswIndexesOf(collection.id), [], 'no HNSW index of the deleted collection');
      else t.match(await vectorStore.describe(collection.id), { vectors: 0, memory_index: { loaded: false } }, 'no in-memory index of the deleted collection');
      if (keywordIndex.name === 'sql') {
        const [row] = await services.sql<{ postings: string | number; stats: string | number }>(
          `select (select count(*) from keyword_postings where collection_id = ?) as postings,
             (select count(*) from keyword_stats where collection_id = ?) as stats`,
          [collection.id, collection.id],
        );
        t.same([Number(row!.postings), Number(row!.stats)], [0, 0], 'no keyword postings or statistics');
      }
    });

    for (const failing of ['keyword index', 'vector store'] as const) {
      await t.test(`a truncate whose ${failing} removal fails: 500, then the sweep removes the entries and keeps newer ones`, async (t) => {
        const name = `truncated-${failing.replace(' ', '-')}`;
        const collection = await createTestCollection(app, admin, { name, chunk_size: 400, chunk_overlap: 0 });
        await upload(t, name, 'samphire');
        await waitForIngestion(app, name, admin);
        const keys = (await services.sql<{ key: string | number }>('select key from chunks where collection_id = ?', [collection.id])).map((row) => Number(row.key));
        t.ok(keys.length > 1, `the collection has ${keys.length} chunks`);

        if (failing === 'keyword index') failNextCalls(t, keywordIndex, 'clearDeletedRows');
        else failNextCalls(t, vectorStore, 'delete');
        const truncated = await app.inject({ method: 'POST', url: `/v1/collections/${name}/truncate`, headers: admin });
        t.equal(truncated.statusCode, 500, truncated.body);
        t.type(truncated.json().detail, 'string', 'the 500 has a detail');
        const owed = await pending(collection.id);
        t.equal(owed.length, 1, 'one removal is owed');
        t.same(owed[0]!.chunk_keys!.map(Number).sort((a, b) => a - b), [...keys].sort((a, b) => a - b), 'of the truncated chunks');

        const keptId = await upload(t, name, 'sea-kale');
        await waitForIngestion(app, name, admin);
        await pastGracePeriod();
        t.equal(await services.indexRemovals.sweep(), 1, 'the sweep performs the removal');
        t.same(await pending(collection.id), [], 'nothing owed any more');
        const after = await stats(name);
        t.equal(after.vectors, after.chunks, `as many vectors as chunks (${after.chunks})`);
        t.same(await found(name, 'samphire'), [], 'the truncated document is not found');
        t.ok((await found(name, 'sea-kale')).includes(keptId), 'the document uploaded since is');
        if (keywordIndex.name === 'sql') t.same(await keywordTables(collection.id, keys), { postings: 0, chunkCount: after.chunks }, 'BM25 statistics count the chunks uploaded since only');
      });
    }

    await t.test('a document removal owed in a collection deleted since: the collection took the entries, the record goes', async (t) => {
      const collection = await createTestCollection(app, admin, { name: 'gone-since', chunk_size: 400, chunk_overlap: 0 });
      const id = await upload(t, 'gone-since', 'glasswort');
      await waitForIngestion(app, 'gone-since', admin);
      failNextCalls(t, vectorStore, 'delete');
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/gone-since/documents/${id}`, headers: admin })).statusCode, 500);
      t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/gone-since', headers: admin })).statusCode, 204);
      t.equal((await pending(collection.id)).length, 1, 'the document removal is still owed');
      await pastGracePeriod();
      t.equal(await services.indexRemovals.sweep(), 1, 'the sweep settles it');
      t.same(await pending(collection.id), [], 'nothing owed any more');
      t.equal(await vectorStore.count(collection.id), 0, 'no vectors');
    });

    await t.test("the sweep's timer performs an owed removal, no one calling it", async (t) => {
      const collection = await createTestCollection(app, admin, { name: 'timed', chunk_size: 400, chunk_overlap: 0 });
      const id = await upload(t, 'timed', 'samphire');
      await waitForIngestion(app, 'timed', admin);
      // The service's own sweep, as services.ts builds it, on a timer of 50 ms and no grace period.
      const timed = new PendingIndexRemovalSweep(
        { sql: services.sql, indexes: services.indexes, recordWrite: (collectionId) => services.collections.recordWrite(services.sql, collectionId) },
        app.log, { intervalMs: 50, graceMs: 0 },
      );
      timed.start();
      t.teardown(() => timed.stop());
      t.equal(await timed.sweep(), 0, 'after the sweep start() runs at once, nothing was owed: what is performed below, the timer performs');
      failNextCalls(t, vectorStore, 'delete');
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/timed/documents/${id}`, headers: admin })).statusCode, 500);
      await waitUntil(async () => (await pending(collection.id)).length === 0, 'a sweep of the timer performed the owed removal', 5_000);
      const after = await stats('timed');
      t.equal(after.vectors, after.chunks, `as many vectors as chunks (${after.chunks})`);
    });

    await t.test('deletes that succeed leave nothing owed', async (t) => {
      const collection = await createTestCollection(app, admin, { name: 'plain', chunk_size: 400, chunk_overlap: 0 });
      const id = await upload(t, 'plain', 'eelgrass');
      await waitForIngestion(app, 'plain', admin);
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/plain/documents/${id}`, headers: admin })).statusCode, 204);
      t.same(await pending(collection.id), [], 'after a document delete');
      await upload(t, 'plain', 'eelgrass');
      await waitForIngestion(app, 'plain', admin);
      t.same((await app.inject({ method: 'POST', url: '/v1/collections/plain/truncate', headers: admin })).json(), { deleted_documents: 1 });
      t.same(await pending(collection.id), [], 'after a truncate');
      t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/plain', headers: admin })).statusCode, 204);
      t.same(await pending(collection.id), [], 'after a collection delete');
      t.same(await services.sql('select id from pending_index_removals'), [], 'nothing owed at all');
    });
  });
}
