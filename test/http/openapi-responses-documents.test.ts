/**
 * The success bodies the OpenAPI document describes for the collection, statistics, document,
 * batch and upload-session routes are the ones they answer (test/support/openapi-responses.ts),
 * with each variant that changes the shape: a collection with every field set, documents pending,
 * ready and failed, a duplicate and a replacing upload, image elements, a batch with a refused
 * file and one whose document was deleted since, sessions open, completed and cancelled, reprocessing.
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { InjectOptions } from 'fastify';
import t, { type Test } from 'tap';
import { harbourAtlasHtml } from '../support/document-fixtures.js';
import { documentedResponses } from '../support/openapi-responses.js';
import { adminTestApp, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const HARBOUR = 'The harbour master keeps the tide tables for the inner harbour.\n\nCranes on the quay unload the container ships at dawn.';

const ATLAS = harbourAtlasHtml();

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    // Workers start once the pending shapes are checked and one stored original is removed (to fail its document).
    const { app, services, admin } = await adminTestApp(t, backend, {}, { startWorkers: false });
    const assertDocumented = await documentedResponses(app);

    /** Sends the request, checks it got `status` (an error body would match the Error schema), then its documented body. */
    const documented = async (t: Test, status: number, options: InjectOptions & { method: string; url: string }) => {
      const answer = await app.inject({ ...options, headers: { ...admin, ...options.headers } });
      t.equal(answer.statusCode, status, `${options.method} ${options.url} ${status}`, { body: answer.body.slice(0, 300) });
      assertDocumented(t, options.method, options.url, answer);
      return answer.json() as Record<string, any>;
    };
    const upload = (t: Test, status: number, url: string, files: Parameters<typeof multipartUpload>[0], fields: Record<string, string> = {}) => {
      const body = multipartUpload(files, fields);
      return documented(t, status, { method: 'POST', url, headers: body.headers, payload: body.payload });
    };
    const text = (filename: string, content: string) => ({ filename, content, contentType: 'text/plain' });

    await t.test('collections: create, list, get, update', async (t) => {
      await documented(t, 201, { method: 'POST', url: '/v1/collections', payload: { name: 'docs' } });
      await documented(t, 201, { method: 'POST', url: '/v1/collections', payload: { name: 'atlas', multimodal_enabled: true } });
      const full = await documented(t, 201, {
        method: 'POST', url: '/v1/collections', payload: {
          name: 'full', description: 'Every field', embedding_preset_id: null, embedding_provider: 'local', embedding_model: 'local-hash-256',
          embedding_api_key: 'sk-embed-123', embedding_base_url: 'http://localhost:11434/v1', dimension: 256, chunk_size: 500, chunk_overlap: 50,
          chunk_strategy: 'paragraph', tenant_field: 'org.id', metadata_schema: { type: 'object', properties: { lang: { type: 'string' } } },
          reranking_enabled: true, reranking_model: 'local', reranking_base_url: 'http://localhost:8080', reranking_api_key: 'rr-456',
          multimodal_enabled: true, multimodal_enrichment_enabled: true, default_top_k: 7, default_min_score: 0.25, default_search_mode: 'keyword',
          metadata: { team: 'docs', tier: 2 },
        },
      });
      t.match(full, { has_embedding_api_key: true, has_reranking_api_key: true, tenant_field: 'org.id' });
      t.equal((await documented(t, 200, { method: 'GET', url: '/v1/collections' })).total, 3);
      await documented(t, 200, { method: 'GET', url: '/v1/collections?name=ful&limit=1' });
      await documented(t, 200, { method: 'GET', url: '/v1/collections/full' });
      await documented(t, 200, { method: 'GET', url: '/v1/collections/docs' });
      await documented(t, 200, { method: 'PATCH', url: '/v1/collections/full', payload: { description: null, embedding_api_key: null, metadata_schema: null } });
    });

    const docs = '/v1/collections/docs/documents';
    let vanished = '';
    let first = '';
    let batch = { id: '', documentId: '' };
    await t.test('uploads while no worker runs: pending documents, duplicates, replacements', async (t) => {
      // Over 64 KB, so it is a file; removed below, its document fails at parsing.
      vanished = (await upload(t, 202, docs, [text('vanished.txt', 'This file will be gone before a worker reads it. '.repeat(1500))])).id;
      const collectionId = (await documented(t, 200, { method: 'GET', url: '/v1/collections/docs' })).id as string;
      const directory = path.join(services.config.dataDir, 'files', collectionId);
      for (const entry of await readdir(directory, { withFileTypes: true })) if (entry.isFile()) await rm(path.join(directory, entry.name));

      first = (await upload(t, 202, docs, [text('first.txt', HARBOUR)], { metadata: JSON.stringify({ source: 'wiki' }) })).id;
      t.match(await upload(t, 200, docs, [text('again.txt', HARBOUR)], { metadata: JSON.stringify({ source: 'wiki' }) }), { id: first, duplicate: true });
      const second = await upload(t, 202, docs, [text('second.txt', 'Fishing boats return to the marina.')]);
      t.match(await upload(t, 202, docs, [text('second.txt', 'Fishing boats return to the marina.')], { on_duplicate: 'replace' }), { replaced_document_ids: [second.id] });
      await upload(t, 202, '/v1/collections/atlas/documents', [{ filename: 'atlas.html', content: ATLAS, contentType: 'text/html' }]);

      const pending = await documented(t, 200, { method: 'GET', url: `${docs}?status=pending&sort=filename&order=asc` });
      t.ok(pending.data.length > 0 && pending.data.every((document: any) => document.status === 'pending'), 'listed while pending');
      await documented(t, 200, { method: 'GET', url: `${docs}/${first}` });
      await documented(t, 200, { method: 'GET', url: `${docs}/${first}/chunks` });
      await documented(t, 200, { method: 'GET', url: `${docs}/${first}/elements` });
    });

    await t.test('a batch with a refused file, its details and status while pending', async (t) => {
      const created = await upload(t, 202, `${docs}/batch`, [
        text('lighthouse.txt', 'The lighthouse keeper trims the lamp at dusk.'),
        { filename: 'tool.exe', content: Buffer.from([0x4d, 0x5a, 0x90, 0x00]), contentType: 'application/x-msdownload' },
        text('bees.txt', 'Bees keep the harbour gardens in flower.'),
      ], { metadata: JSON.stringify({ source: 'batch' }) });
      t.same(created.documents.map((entry: any) => entry.status), ['pending', 'rejected', 'pending']);
      batch = { id: created.batch_id, documentId: created.documents[0].id };
      await documented(t, 200, { method: 'GET', url: `/v1/collections/docs/batches/${batch.id}` });
      t.match(await documented(t, 200, { method: 'GET', url: `/v1/collections/docs/batches/${batch.id}/status` }), { done: false, by_status: { rejected: 1, pending: 2 } });
    });

    const uploads = '/v1/collections/docs/uploads';
    let session = '';
    await t.test('upload sessions: open, add files, complete; and a cancelled one', async (t) => {
      session = (await documented(t, 201, { method: 'POST', url: uploads, payload: { metadata: { source: 'session' }, on_duplicate: 'keep' } })).id;
      await documented(t, 200, { method: 'GET', url: `${uploads}/${session}` });
      const body = multipartUpload([text('tides.txt', 'High water comes at dawn and dusk.'), text('quay.txt', 'The quay is busiest at noon.')]);
      t.equal((await documented(t, 200, { method: 'PUT', url: `${uploads}/${session}/files`, headers: body.headers, payload: body.payload })).file_count, 2);
      t.match(await documented(t, 202, { method: 'POST', url: `${uploads}/${session}/complete` }), { status: 'completing', documents: [{ duplicate: false }, { duplicate: false }] });

      const bare = (await documented(t, 201, { method: 'POST', url: uploads })).id;
      const cancel = await app.inject({ method: 'DELETE', url: `${uploads}/${bare}`, headers: admin });
      t.equal(cancel.statusCode, 204);
      t.match(await documented(t, 200, { method: 'GET', url: `${uploads}/${bare}` }), { status: 'cancelled' });
    });

    await t.test('once ingested: ready and failed documents, chunks, elements, the completed batch and session', async (t) => {
      await services.start();
      for (const name of ['docs', 'atlas']) await waitForIngestion(app, name, admin);
      const ready = await documented(t, 200, { method: 'GET', url: `${docs}?status=ready&filters=${encodeURIComponent(JSON.stringify({ source: 'wiki' }))}` });
      t.match(ready.data, [{ id: first, status: 'ready' }]);
      t.match(await documented(t, 200, { method: 'GET', url: `${docs}/${vanished}` }), { status: 'failed', error: /failed/ });
      t.match(await documented(t, 200, { method: 'GET', url: `/v1/documents/${vanished}` }), { status: 'failed' });
      await documented(t, 200, { method: 'GET', url: `/v1/documents/${first}` });
      t.ok((await documented(t, 200, { method: 'GET', url: `${docs}/${first}/chunks?limit=1` })).data.length > 0);
      t.ok((await documented(t, 200, { method: 'GET', url: `${docs}/${first}/elements` })).data.length > 0);
      const atlas = (await documented(t, 200, { method: 'GET', url: '/v1/collections/atlas/documents' })).data[0].id as string;
      const elements = await documented(t, 200, { method: 'GET', url: `/v1/collections/atlas/documents/${atlas}/elements` });
      t.ok(elements.data.some((element: any) => element.type === 'image' && element.content_url), 'an image element is listed');

      t.match(await documented(t, 200, { method: 'GET', url: `/v1/collections/docs/batches/${batch.id}/status` }), { done: true });
      t.match(await documented(t, 200, { method: 'GET', url: `${uploads}/${session}` }), { status: 'completed' });
      const deleted = await app.inject({ method: 'DELETE', url: `${docs}/${batch.documentId}`, headers: admin });
      t.equal(deleted.statusCode, 204);
      const details = await documented(t, 200, { method: 'GET', url: `/v1/collections/docs/batches/${batch.id}` });
      t.same(details.documents.map((entry: any) => entry.status), ['deleted', 'rejected', 'ready']);
    });

    await t.test('statistics and analytics', async (t) => {
      for (const query of ['tide tables', 'zeppelin quartz']) {
        const answer = await app.inject({ method: 'POST', url: '/v1/collections/docs/query', headers: admin, payload: { query, search_mode: 'keyword' } });
        t.equal(answer.statusCode, 200, answer.body.slice(0, 200));
      }
      const analytics = await documented(t, 200, { method: 'GET', url: '/v1/collections/docs/analytics?window_days=7' });
      t.ok(analytics.queries_per_day.length > 0 && analytics.top_queries.length > 0 && analytics.zero_result_queries.length > 0, 'every list has an entry');
      await documented(t, 200, { method: 'GET', url: '/v1/collections/docs/stats' });
      await documented(t, 200, { method: 'GET', url: '/v1/collections/full/stats' });
      await documented(t, 200, { method: 'GET', url: '/v1/stats' });
      t.ok((await documented(t, 200, { method: 'GET', url: '/v1/embeddings/models?limit=500' })).data.length > 0);
    });

    await t.test('reprocessing, deleting a batch, truncating', async (t) => {
      t.match(await documented(t, 202, { method: 'POST', url: `${docs}/${first}/reprocess` }), { id: first, status: 'pending' });
      // The counts depend on whether a worker already finished `first` (test/documents/collection-reprocess checks them).
      await documented(t, 202, { method: 'POST', url: '/v1/collections/docs/reprocess' });
      await waitForIngestion(app, 'docs', admin);
      const batchDeleted = await app.inject({ method: 'DELETE', url: `/v1/collections/docs/batches/${batch.id}`, headers: admin });
      t.equal(batchDeleted.statusCode, 204);
      t.ok((await documented(t, 200, { method: 'POST', url: '/v1/collections/docs/truncate' })).deleted_documents > 0);
      const removed = await app.inject({ method: 'DELETE', url: '/v1/collections/atlas', headers: admin });
      t.equal(removed.statusCode, 204);
    });
  });
}
