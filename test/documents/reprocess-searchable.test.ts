/**
 * Reprocessing replaces a document's chunks in place: it stays searchable while the new run writes
 * (its old chunks answer until each is replaced), and chunks past the new count are removed at
 * the end, rows and index entries alike.
 */
import t from 'tap';
import { documentChunkId, insertChunks } from '../../src/documents/chunk-store.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const text = Array.from({ length: 8 }, (_, index) => `Lighthouse ${index}: the keeper trims the lamp while gulls circle the rocks below.`).join('\n\n');

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'beacons', chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' });
    const body = multipartUpload([{ filename: 'lighthouse.txt', content: text, contentType: 'text/plain' }]);
    const id = (await app.inject({ method: 'POST', url: '/v1/collections/beacons/documents', headers: { ...admin, ...body.headers }, payload: body.payload })).json().id as string;
    const [document] = await waitForIngestion(app, 'beacons', admin);
    t.equal(document!.chunk_count, 8);
    const keywordHits = async () => (await app.inject({
      method: 'POST', url: '/v1/collections/beacons/query', headers: admin, payload: { query: 'lighthouse keeper', search_mode: 'keyword', top_k: 20, skip_cache: true },
    })).json().results as Array<{ document_id: string; chunk_index: number }>;

    await t.test('found by a query while the reprocessing writes its chunks', async (t) => {
      const { keywordIndex } = services.indexes;
      const add = keywordIndex.add;
      const seen: number[] = [];
      keywordIndex.add = async (...args) => {
        seen.push((await keywordHits()).filter((hit) => hit.document_id === id).length);
        return add.apply(keywordIndex, args);
      };
      t.teardown(() => { keywordIndex.add = add; });
      const response = await app.inject({ method: 'POST', url: `/v1/collections/beacons/documents/${id}/reprocess`, headers: admin });
      t.equal(response.statusCode, 202);
      await waitForIngestion(app, 'beacons', admin);
      keywordIndex.add = add;
      t.ok(seen.length > 0, 'queried during the index write');
      t.same(seen, seen.map(() => 8), 'all 8 chunks answered each time');
    });

    await t.test('chunks an earlier run wrote past the new count are removed, rows and index entries', async (t) => {
      // What a run that cut the text into more chunks leaves (an interrupted attempt, or a chunking
      // setting changed since): rows and index entries at indexes 8-10.
      const [collection] = await services.sql<{ id: string }>('select id from collections where name = ?', ['beacons']);
      const stale = [8, 9, 10].map((index) => ({ id: documentChunkId(id, index), documentId: id, chunkIndex: index, text: `Lighthouse keeper stale chunk ${index}`, metadata: {}, tenant: null }));
      const keys = (await insertChunks(services.sql, collection!.id, stale)) as number[];
      await services.indexes.keywordIndex.add(collection!.id, stale.map((chunk, index) => ({ key: keys[index]!, text: chunk.text, metadata: {}, tenant: null })));
      await services.indexes.vectorStore.upsert(stale.map((chunk, index) => ({ key: keys[index]!, collectionId: collection!.id, documentId: id, embedding: new Float32Array(384).fill(1 / Math.sqrt(384)), metadata: {}, tenant: null })));
      t.equal((await keywordHits()).length, 11, 'the stale chunks are found before');

      t.equal((await app.inject({ method: 'POST', url: `/v1/collections/beacons/documents/${id}/reprocess`, headers: admin })).statusCode, 202);
      const [reprocessed] = await waitForIngestion(app, 'beacons', admin);
      t.equal(reprocessed!.chunk_count, 8);
      const rows = await services.sql<{ chunk_index: number }>('select chunk_index from chunks where document_id = ? order by chunk_index', [id]);
      t.same(rows.map((row) => row.chunk_index), [0, 1, 2, 3, 4, 5, 6, 7], 'rows 0-7 alone');
      t.match((await app.inject({ url: '/v1/collections/beacons/stats', headers: admin })).json(), { chunks: 8, vectors: 8 });
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const answer = (await app.inject({ method: 'POST', url: '/v1/collections/beacons/query', headers: admin, payload: { query: 'lighthouse keeper stale chunk', search_mode: mode, top_k: 20, skip_cache: true } })).json();
        t.same(answer.results.map((hit: { chunk_index: number }) => hit.chunk_index).sort((a: number, b: number) => a - b), [0, 1, 2, 3, 4, 5, 6, 7], `${mode}: chunks 0-7 alone`);
      }
    });
  });
}
