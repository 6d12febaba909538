/**
 * Another replica deletes a collection that this process still has cached (CollectionDirectory keeps
 * lookups for COLLECTION_CACHE_MS): uploads into it, single, batch or a new upload session, are 404
 * naming the collection, and nothing is written. Before, the rows' foreign key refused the insert
 * and the client got a 500. The other replica's delete is a statement straight to the database, as
 * this process is not told of it.
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend, { collectionCacheMs: 60_000 });
    const gone = await createTestCollection(app, admin, { name: 'gone-elsewhere' });
    t.equal((await app.inject({ url: '/v1/collections/gone-elsewhere', headers: admin })).statusCode, 200, 'looked up, so this process caches it');
    await services.sql('delete from collections where id = ?', [gone.id]);

    const single = multipartUpload([{ filename: 'late.txt', content: 'A late arrival.', contentType: 'text/plain' }]);
    assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/gone-elsewhere/documents', headers: { ...admin, ...single.headers }, payload: single.payload }),
      404, /^Collection gone-elsewhere not found: it was deleted while this request was handled/, 'single upload');
    const batch = multipartUpload([{ filename: 'a.txt', content: 'First.', contentType: 'text/plain' }, { filename: 'b.txt', content: 'Second.', contentType: 'text/plain' }]);
    assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/gone-elsewhere/documents/batch', headers: { ...admin, ...batch.headers }, payload: batch.payload }),
      404, /^Collection gone-elsewhere not found/, 'batch upload');
    assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/gone-elsewhere/uploads', headers: admin, payload: {} }),
      404, /^Collection gone-elsewhere not found/, 'upload session');

    for (const table of ['documents', 'document_batches', 'upload_sessions', 'jobs']) {
      const [row] = await services.sql<{ count: string | number }>(`select count(*) as count from ${table} where collection_id = ?`, [gone.id]);
      t.equal(Number(row!.count), 0, `no ${table} row`);
    }
  });
}
