/**
 * Collection stats, `GET /v1/stats` and `/v1/usage` read chunk counts and chunk text bytes from
 * totals the database keeps per collection (migration 0027). After every kind of write (upload,
 * reprocess, raw vector insert, replacement and deletion, document deletion through the API and in
 * the database, truncate, collection deletion) each figure equals a count of the chunk rows
 * themselves.
 */
import t from 'tap';
import { jsonRequests } from '../support/json-requests.js';
import { adminTestApp, createTestCollection, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';

interface CollectionStats { chunks: number; raw_vectors: number; storage: { chunk_text_bytes: number; vector_bytes: number } }
interface InstanceStats { chunks: number; storage: { chunk_text_bytes: number; vector_bytes: number } }
interface UsageReport { chunks_total: number; by_collection: Array<{ collection: string; chunks: number }> }

const unitVector = (dimension: number, axis: number) => Array.from({ length: dimension }, (_, index) => (index === axis ? 1 : 0));

const manual = [
  '# Harbour manual', '', 'The lighthouse keeper logs every ship that passes the breakwater at night.', '',
  '## Tides', '', 'Spring tides run higher in the estuary; the gauge at the quay reads them in metres.', '',
  '## Fog', '', 'When fog comes in, the foghorn sounds twice a minute until the keeper sees the far buoy.',
].join('\n');

for (const backend of testBackends()) {
  t.test(`${backend}: stored totals match the chunk rows through every kind of write`, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend);
    const { ok, request } = jsonRequests(app, admin);
    await createTestCollection(app, admin, { name: 'harbour', chunk_size: 60, chunk_overlap: 0 });
    const river = await createTestCollection(app, admin, { name: 'river', dimension: 4 });

    /** What the rows say: chunks, raw vectors and UTF-8 text bytes of one collection. */
    const counted = async (name: string) => {
      const [row] = await services.sql<{ chunks: number; raw: number; bytes: number }>(
        `select count(*)::int as chunks, count(*) filter (where k.document_id is null)::int as raw, coalesce(sum(octet_length(k.text)), 0)::int as bytes
           from chunks k join collections c on c.id = k.collection_id where c.name = ?`, [name],
      );
      return row!;
    };
    const check = async (step: string) => {
      const usage = await ok<UsageReport>('GET', '/v1/usage');
      const instance = await ok<InstanceStats>('GET', '/v1/stats');
      let chunks = 0;
      let bytes = 0;
      let vectorBytes = 0;
      for (const [name, dimension] of [['harbour', 384], ['river', 4]] as const) {
        const rows = await counted(name);
        chunks += rows.chunks;
        bytes += rows.bytes;
        vectorBytes += rows.chunks * dimension * 4;
        const response = await request('GET', `/v1/collections/${name}/stats`);
        if (response.statusCode === 404) continue;
        const stats = response.json() as CollectionStats;
        t.same({ chunks: stats.chunks, raw: stats.raw_vectors, bytes: stats.storage.chunk_text_bytes }, rows, `${step}: ${name}'s stats count its rows`);
        const used = usage.by_collection.find((row) => row.collection === name);
        t.equal(used?.chunks, rows.chunks, `${step}: ${name}'s usage counts its chunks`);
      }
      t.same({ chunks: instance.chunks, bytes: instance.storage.chunk_text_bytes, vectorBytes: instance.storage.vector_bytes }, { chunks, bytes, vectorBytes },
        `${step}: /v1/stats counts every collection's rows, and a float32 vector of its dimension for each`);
      t.equal(usage.chunks_total, chunks, `${step}: /v1/usage's total too`);
    };

    await check('empty collections');
    const uploaded = await uploadDocument(app, admin, 'harbour', { filename: 'manual.md', content: manual, contentType: 'text/markdown' });
    t.equal(uploaded.statusCode, 202, uploaded.body);
    const [document] = await waitForIngestion(app, 'harbour', admin);
    t.equal(document!.status, 'ready', document!.error ?? '');
    t.ok(document!.chunk_count > 2, `the manual is cut into ${document!.chunk_count} chunks`);
    await check('after an upload');

    const vectors = [
      { id: 'quay', embedding: unitVector(4, 0), text: 'quay' },
      { id: 'weir', embedding: unitVector(4, 1), text: 'weir' },
      { id: 'schleuse', embedding: unitVector(4, 2), text: 'Schleuse' },
    ];
    await ok('POST', '/v1/collections/river/vectors/upsert', { vectors });
    const river3 = await ok<CollectionStats>('GET', '/v1/collections/river/stats');
    t.same({ chunks: river3.chunks, raw: river3.raw_vectors, bytes: river3.storage.chunk_text_bytes, vectorBytes: river3.storage.vector_bytes },
      { chunks: 3, raw: 3, bytes: 16, vectorBytes: 48 }, 'three raw vectors: 4 + 4 + 8 text bytes, three of 4 float32s');
    await check('after inserting raw vectors');

    await ok('POST', '/v1/collections/river/vectors/upsert', { vectors: [{ id: 'weir', embedding: unitVector(4, 3), text: 'Wehr über dem Fluss' }] });
    t.equal((await ok<CollectionStats>('GET', '/v1/collections/river/stats')).storage.chunk_text_bytes, 32, 'a replaced text counts its 20 new bytes (ü is two), not the 4 old ones');
    await check('after replacing a raw vector');

    await ok('POST', '/v1/collections/river/vectors/delete', { ids: ['quay', 'unknown'] });
    await check('after deleting a raw vector');

    await ok('PATCH', '/v1/collections/harbour', { chunk_strategy: 'paragraph' });
    const reprocessed = await request('POST', `/v1/collections/harbour/documents/${document!.id}/reprocess`);
    t.equal(reprocessed.statusCode, 202, reprocessed.body);
    const [again] = await waitForIngestion(app, 'harbour', admin);
    t.equal(again!.status, 'ready', again!.error ?? '');
    await check(`after reprocessing into ${again!.chunk_count} chunks`);

    const second = await uploadDocument(app, admin, 'harbour', { filename: 'second.txt', content: 'The ferry leaves the pier at dawn.' });
    t.equal(second.statusCode, 202, second.body);
    await waitForIngestion(app, 'harbour', admin);
    const removed = await request('DELETE', `/v1/collections/harbour/documents/${document!.id}`);
    t.equal(removed.statusCode, 204, removed.body);
    await check('after deleting a document');

    // Another path than the service's own statements: the database's document trigger deletes the chunks and lowers the totals.
    const [ferry] = (await waitForIngestion(app, 'harbour', admin)).filter((row) => row.filename === 'second.txt');
    await services.sql('delete from documents where id = ?', [ferry!.id]);
    await check('after a document row was deleted in the database');
    t.equal((await ok<CollectionStats>('GET', '/v1/collections/harbour/stats')).chunks, 0, 'harbour has no chunk left');

    const third = await uploadDocument(app, admin, 'harbour', { filename: 'third.md', content: manual, contentType: 'text/markdown' });
    t.equal(third.statusCode, 202, third.body);
    await waitForIngestion(app, 'harbour', admin);
    t.ok((await ok<CollectionStats>('GET', '/v1/collections/harbour/stats')).chunks > 2, 'harbour has chunks again');

    await ok('POST', '/v1/collections/harbour/truncate');
    const truncated = await ok<CollectionStats>('GET', '/v1/collections/harbour/stats');
    t.same({ chunks: truncated.chunks, bytes: truncated.storage.chunk_text_bytes }, { chunks: 0, bytes: 0 }, 'a truncated collection has no chunk left');
    await check('after a truncate');

    const deleted = await request('DELETE', '/v1/collections/river');
    t.equal(deleted.statusCode, 204, deleted.body);
    await check('after deleting a collection');
    const [left] = await services.sql<{ rows: number }>('select count(*)::int as rows from collection_chunk_totals where collection_id = ?', [river.id]);
    t.equal(left!.rows, 0, 'its totals went with it');
  });
}
