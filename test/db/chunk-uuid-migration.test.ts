/**
 * Migration 0011: chunks stored with the id "<document id>:<index>" get the UUID new chunks get
 * (documentChunkId), so clients see UUIDs everywhere and reprocessing still writes in place.
 */
import t from 'tap';
import { documentChunkId } from '../../src/documents/chunk-store.js';
import { Migration0011ChunkUuids } from '../../src/db/migrations/0011-chunk-uuids.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const text = Array.from({ length: 3 }, (_, index) => `Tide table ${index}: high water at the harbour mouth comes an hour after the moon.`).join('\n\n');

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'tides', chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' });
    const body = multipartUpload([{ filename: 'tides.txt', content: text, contentType: 'text/plain' }]);
    const documentId = (await app.inject({ method: 'POST', url: '/v1/collections/tides/documents', headers: { ...admin, ...body.headers }, payload: body.payload })).json().id as string;
    await waitForIngestion(app, 'tides', admin);
    const upsert = await app.inject({ method: 'POST', url: '/v1/collections/tides/vectors/upsert', headers: admin, payload: { vectors: [{ id: 'named:0', text: 'a raw vector on the tide, named like an old chunk', embedding: Array.from({ length: 384 }, (_, index) => (index === 0 ? 1 : 0)) }] } });
    t.equal(upsert.statusCode, 200, upsert.body);

    const chunkIds = async () => (await app.inject({ url: `/v1/collections/tides/documents/${documentId}/chunks`, headers: admin })).json().data.map((chunk: { id: string }) => chunk.id) as string[];
    const queryIds = async () => (await app.inject({
      method: 'POST', url: '/v1/collections/tides/query', headers: admin, payload: { query: 'tide table harbour', search_mode: 'keyword', top_k: 10, skip_cache: true },
    })).json().results.map((result: { id: string }) => result.id).sort() as string[];
    const expected = [0, 1, 2].map((index) => documentChunkId(documentId, index));

    t.same(await chunkIds(), expected, 'new chunks are written with their UUIDs');
    await services.sql("update chunks set id = document_id::text || ':' || chunk_index::text where document_id is not null");
    t.same(await chunkIds(), [0, 1, 2].map((index) => `${documentId}:${index}`), 'stored as before the migration');

    const migration = new Migration0011ChunkUuids(services.db.orm.em.getDriver(), services.db.orm.config);
    await migration.up();
    for (const statement of migration.getQueries()) await services.sql(String(statement));

    t.same(await chunkIds(), expected, 'the migration computes the ids new chunks get');
    t.same(await queryIds(), [...expected, 'named:0'].sort(), 'queries answer them; a raw vector keeps the id its caller gave');

    const reprocess = await app.inject({ method: 'POST', url: `/v1/collections/tides/documents/${documentId}/reprocess`, headers: admin });
    t.equal(reprocess.statusCode, 202);
    await waitForIngestion(app, 'tides', admin);
    t.same(await chunkIds(), expected, 'reprocessing writes over the migrated chunks in place');
    const [{ count }] = await services.sql<{ count: string | number }>('select count(*) as count from chunks') as [{ count: string | number }];
    t.equal(Number(count), 4, 'three chunks and the raw vector, no copies');
  });
}
