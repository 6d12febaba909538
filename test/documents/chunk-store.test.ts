/**
 * Chunk rows are written only while their collection and document exist (migration 0008 replaced
 * the per-row foreign keys with one check per statement). A deletion racing a write cannot be timed
 * through the API for raw vectors, so the store is called directly here; the document case is also
 * shown end to end in test/ingestion/deleted-during-ingestion.test.ts. Raw-vector upserts replace
 * only their own tenant's vectors (test/vectors/raw-vectors.test.ts races two tenants through the API).
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { insertChunks } from '../../src/documents/chunk-store.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend);
    const collection = await createTestCollection(app, admin, { name: 'owners' });
    const body = multipartUpload([{ filename: 'live.txt', content: 'A live document about kestrels.', contentType: 'text/plain' }]);
    const live = (await app.inject({ method: 'POST', url: '/v1/collections/owners/documents', headers: { ...admin, ...body.headers }, payload: body.payload })).json().id as string;
    await waitForIngestion(app, 'owners', admin);
    const chunk = (id: string, documentId: string | null) => ({ id, documentId, chunkIndex: 0, text: `text of ${id}`, metadata: {}, tenant: null });
    const rowsOf = async (ids: string[]) => (await services.sql<{ id: string }>('select id from chunks where id = any(?::text[])', [ids])).map((row) => row.id).sort();

    await t.test('a deleted collection: nothing is written, every key is null', async (t) => {
      const keys = await insertChunks(services.sql, randomUUID(), [chunk('orphan-raw', null)]);
      t.same(keys, [null]);
      t.same(await rowsOf(['orphan-raw']), [], 'no row');
    });

    await t.test('a deleted document: its rows are skipped, the others written with their keys in order', async (t) => {
      const keys = await insertChunks(services.sql, collection.id, [chunk('raw-a', null), chunk('gone:0', randomUUID()), chunk(`${live}:extra`, live)]);
      t.equal(keys.length, 3);
      t.type(keys[0], 'number');
      t.equal(keys[1], null, 'the row of a document that does not exist');
      t.type(keys[2], 'number');
      t.same(await rowsOf(['raw-a', 'gone:0', `${live}:extra`]), [`${live}:extra`, 'raw-a'].sort(), 'only the rows with owners');
      const [stored] = await services.sql<{ key: string | number }>('select key from chunks where id = ?', ['raw-a']);
      t.equal(Number(stored!.key), keys[0], 'keys answer their own rows');
    });

    await t.test('replaceOnlyOwnRawVectors: a raw vector of the same tenant is replaced, nothing else', async (t) => {
      // Tenants as a collection with tenant_field "tenant" writes them: in metadata and, as text, in the column.
      const owned = (id: string, documentId: string | null, tenant: string | null, text: string) => ({ ...chunk(id, documentId), tenant, text, metadata: tenant === null ? {} : { tenant } });
      const [acmeKey] = await insertChunks(services.sql, collection.id, [owned('acme-vector', null, 'acme', 'first')]);
      const [documentKey] = await insertChunks(services.sql, collection.id, [owned(`${live}:taken`, live, null, 'of the document')]);
      const keys = await insertChunks(services.sql, collection.id, [
        owned('acme-vector', null, 'globex', 'globex over acme'),
        owned(`${live}:taken`, null, null, 'raw over a document chunk'),
        owned('fresh', null, 'globex', 'new id'),
      ], { replaceOnlyOwnRawVectors: true });
      t.same(keys.slice(0, 2), [null, null], "another tenant's vector and a document's chunk are left alone");
      t.type(keys[2], 'number', 'a new id is written');
      const [again] = await insertChunks(services.sql, collection.id, [owned('acme-vector', null, 'acme', 'second')], { replaceOnlyOwnRawVectors: true });
      t.equal(again, acmeKey, 'the same tenant replaces its vector, keeping the key');
      const rows = await services.sql<{ id: string; key: string | number; text: string; tenant: string | null; document_id: string | null }>(
        'select id, key, text, tenant, document_id from chunks where id = any(?::text[]) order by id', [['acme-vector', `${live}:taken`]],
      );
      t.same(rows.map((row) => [row.id, Number(row.key), row.text, row.tenant, row.document_id]).sort(), [
        ['acme-vector', acmeKey, 'second', 'acme', null],
        [`${live}:taken`, documentKey, 'of the document', null, live],
      ].sort());
    });
  });
}
