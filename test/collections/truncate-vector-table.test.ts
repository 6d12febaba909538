/**
 * The embedded store's table of vectors when a collection is truncated or deleted: another
 * collection's vectors stay, and when the collection held every row the table is truncated, so its
 * space is free at once instead of waiting for the database's VACUUM. Embedded database only (on
 * PostgreSQL the default store is pgvector).
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, waitForIngestion } from '../support/test-app.js';

const TEXTS: Record<string, string> = {
  harbour: 'The harbour master logged every ship that entered the bay.\n\nCranes unloaded timber at the north quay.',
  orchard: 'The orchard grew apples and pears along the river.\n\nPickers filled crates before the first frost.',
};

t.test('truncating or deleting collections empties the embedded vector table, and only of their rows', async (t) => {
  const { app, services, admin } = await adminTestApp(t, 'pglite');
  const upload = async (collection: string, text: string) => {
    const body = multipartUpload([{ filename: `${text}.txt`, content: TEXTS[text]!, contentType: 'text/plain' }]);
    const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
    t.equal(response.statusCode, 202, response.body);
    await waitForIngestion(app, collection, admin);
  };
  const vectorRows = async (collectionId: string) =>
    Number((await services.sql<{ rows: string | number }>('select count(*) as rows from embedded_vectors where collection_id = ?', [collectionId]))[0]!.rows);
  const tableBytes = async () => Number((await services.sql<{ bytes: string | number }>("select pg_relation_size('embedded_vectors') as bytes"))[0]!.bytes);
  const semanticTotal = async (collection: string, query: string) => {
    const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/query`, headers: admin, payload: { query, search_mode: 'semantic', skip_cache: true } });
    t.equal(response.statusCode, 200, response.body);
    return response.json().total as number;
  };

  const ports = await createTestCollection(app, admin, { name: 'ports' });
  const farms = await createTestCollection(app, admin, { name: 'farms' });
  await upload('ports', 'harbour');
  await upload('farms', 'orchard');
  const farmRows = await vectorRows(farms.id);
  t.ok(farmRows > 0 && await vectorRows(ports.id) > 0, 'both collections have vectors');

  const truncated = await app.inject({ method: 'POST', url: '/v1/collections/ports/truncate', headers: admin });
  t.equal(truncated.statusCode, 200, truncated.body);
  t.equal(await vectorRows(ports.id), 0, 'the truncated collection has no vectors left');
  t.equal(await vectorRows(farms.id), farmRows, 'the other collection keeps every vector');
  t.ok(await semanticTotal('farms', 'apples and pears in the orchard') > 0, 'and is still searched');

  const alone = await app.inject({ method: 'POST', url: '/v1/collections/farms/truncate', headers: admin });
  t.equal(alone.statusCode, 200, alone.body);
  t.equal(await tableBytes(), 0, 'the last collection with vectors truncated: the table holds no pages at all');
  t.equal(await semanticTotal('farms', 'apples and pears in the orchard'), 0, 'nothing is found');

  await upload('farms', 'orchard');
  await upload('ports', 'harbour');
  t.ok(await semanticTotal('farms', 'apples and pears in the orchard') > 0, 'vectors written after the truncate are searched');
  const deletion = await app.inject({ method: 'DELETE', url: '/v1/collections/ports', headers: admin });
  t.equal(deletion.statusCode, 204, deletion.body);
  t.equal(await vectorRows(farms.id), farmRows, 'deleting another collection keeps this one\'s vectors');
  t.ok(await tableBytes() > 0);
  const lastDeletion = await app.inject({ method: 'DELETE', url: '/v1/collections/farms', headers: admin });
  t.equal(lastDeletion.statusCode, 204, lastDeletion.body);
  t.equal(await tableBytes(), 0, 'deleting the last collection with vectors truncates the table too');
});
