/**
 * Batch upload through HTTP: one result per file even when some are refused, batch get / status /
 * delete, duplicate handling (`on_duplicate`), hostile file names, and re-processing without
 * re-uploading. Refused requests leave nothing behind.
 */
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { storedOriginals } from '../support/stored-originals.js';
import { buildPdf, buildPng, buildZipBomb } from '../support/document-fixtures.js';
import {
  bearer, buildTestApp, createApiKey, createTestCollection, multipartUpload, setupAdmin, testBackends, waitForIngestion,
} from '../support/test-app.js';

const LIMIT = 100 * 1024;
const TEXTS = {
  a: 'Lighthouse keepers trimmed the wick every evening before the storm.',
  b: 'Glaciers carve valleys slowly, leaving moraines behind them.',
  c: 'Beekeepers smoke the hive gently before lifting the frames.',
};
const LARGE_B = `${TEXTS.b}\n\n`.repeat(1200);

/** Every file under `root`, as paths relative to it. */
async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    // DATA_DIR sits two levels inside a scratch root, so a write that escaped it would show up in the root.
    const root = await mkdtemp(path.join(os.tmpdir(), 'rs-batches-'));
    const dataDir = path.join(root, 'outer', 'data');
    await mkdir(dataDir, { recursive: true });
    const ctx = await buildTestApp(backend, { uploadLimitBytes: LIMIT }, { dataDir });
    t.teardown(async () => {
      await ctx.close();
      await rm(root, { recursive: true, force: true });
    });
    const { app } = ctx;
    const admin = { cookie: await setupAdmin(app) };
    const createCollection = (payload: Record<string, unknown>) => createTestCollection(app, admin, payload);
    const postBatch = (name: string, body: { payload: Buffer; headers: Record<string, string> }, headers: Record<string, string> = admin) =>
      app.inject({ method: 'POST', url: `/v1/collections/${name}/documents/batch`, headers: { ...headers, ...body.headers }, payload: body.payload });
    const postOne = (name: string, filename: string, content: string, fields: Record<string, string> = {}) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/plain' }], fields);
      return app.inject({ method: 'POST', url: `/v1/collections/${name}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
    };
    const originalsOf = (collectionId: string) => storedOriginals(ctx.services, collectionId);
    const documentTotal = async (name: string) => (await app.inject({ url: `/v1/collections/${name}/documents`, headers: admin })).json().total as number;
    const stats = async (name: string) => (await app.inject({ url: `/v1/collections/${name}/stats`, headers: admin })).json();
    const query = async (name: string, text: string) =>
      (await app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload: { query: text, search_mode: 'keyword' } })).json();

    const mixed = await createCollection({ name: 'mixed' });
    let batchId = '';
    let acceptedIds: string[] = [];

    await t.test('a batch with refused files: 202, one result per file in order, the rest ingested', async (t) => {
      const response = await postBatch('mixed', multipartUpload([
        { filename: 'lighthouse.txt', content: TEXTS.a, contentType: 'text/plain' },
        { filename: 'tool.exe', content: Buffer.from([0x4d, 0x5a, 0x90, 0x00]), contentType: 'application/x-msdownload' },
        // Over 64 KB, so it is written to the file store (smaller originals are kept in the database).
        { filename: '../../etc/passwd', content: LARGE_B, contentType: 'text/plain' },
        { filename: 'empty.txt', content: '', contentType: 'text/plain' },
        { filename: 'huge.txt', content: 'x'.repeat(LIMIT + 1), contentType: 'text/plain' },
        { filename: '..\\..\\windows\\bees.md', content: `# Bees\n\n${TEXTS.c}`, contentType: 'text/markdown' },
      ], { metadata: JSON.stringify({ source: 'batch-1' }) }));
      t.equal(response.statusCode, 202, response.body.slice(0, 300));
      const body = response.json();
      t.match(body.batch_id, /^[0-9a-f-]{36}$/);
      t.equal(body.collection, 'mixed');
      t.equal(body.total, 6);
      t.same(body.documents.map((entry: any) => [entry.filename, entry.status]), [
        ['lighthouse.txt', 'pending'], ['tool.exe', 'rejected'], ['passwd', 'pending'], ['empty.txt', 'rejected'], ['huge.txt', 'rejected'], ['bees.md', 'pending'],
      ], 'client paths are reduced to display names');
      t.match(body.documents[1].error, { status: 415, detail: /tool\.exe.*supported/ });
      t.match(body.documents[3].error, { status: 400, detail: /empty\.txt.*empty/ });
      t.match(body.documents[4].error, { status: 413, detail: new RegExp(`huge\\.txt.*${LIMIT}`) });
      const accepted = body.documents.filter((entry: any) => entry.status === 'pending');
      for (const entry of accepted) {
        t.match(entry, { batch_id: body.batch_id, metadata: { source: 'batch-1' }, duplicate: false, collection: 'mixed' });
      }
      batchId = body.batch_id;
      acceptedIds = accepted.map((entry: any) => entry.id);
      t.equal((await originalsOf(mixed.id)).length, 3, 'only the accepted files are stored');
      const documents = await waitForIngestion(app, 'mixed', admin);
      t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready']);
      t.ok((await query('mixed', 'glaciers moraines')).results.length > 0, 'the passwd-named file is searchable');
    });

    await t.test('nothing is written outside DATA_DIR', async (t) => {
      const everything = await filesUnder(root);
      t.ok(everything.length > 0);
      t.same(everything.filter((file) => !file.startsWith(path.join('outer', 'data') + path.sep)), [], 'every file is under DATA_DIR');
      t.same(everything.filter((file) => /passwd|windows|bees|lighthouse/.test(file)), [], 'no stored file is named after a client file name');
    });

    await t.test('batch get and status', async (t) => {
      const response = await app.inject({ url: `/v1/collections/mixed/batches/${batchId}`, headers: admin });
      t.equal(response.statusCode, 200);
      const batch = response.json();
      t.match(batch, { batch_id: batchId, collection: 'mixed', source: 'upload', total: 6, done: true, by_status: { ready: 3, rejected: 3, pending: 0, processing: 0, failed: 0 } });
      t.same(batch.documents.map((entry: any) => entry.status), ['ready', 'rejected', 'ready', 'rejected', 'rejected', 'ready']);
      t.ok(batch.documents[0].chunk_count > 0);
      t.match(batch.documents[1].error, { status: 415 });
      const status = await app.inject({ url: `/v1/collections/mixed/batches/${batchId}/status`, headers: admin });
      t.equal(status.statusCode, 200);
      t.same(status.json(), { batch_id: batchId, total: 6, by_status: { pending: 0, processing: 0, ready: 3, failed: 0, rejected: 3, deleted: 0 }, done: true });
      const listed = (await app.inject({ url: '/v1/collections/mixed/documents', headers: admin })).json();
      t.ok(listed.data.every((document: any) => document.batch_id === batchId), 'documents carry their batch id');

      // As while a worker holds one of its documents.
      const [processing] = await ctx.services.sql<{ id: string }>(
        "update documents set status = 'processing' where id = (select id from documents where batch_id = ? and status = 'ready' limit 1) returning id", [batchId],
      );
      const busy = (await app.inject({ url: `/v1/collections/mixed/batches/${batchId}/status`, headers: admin })).json();
      t.match(busy, { by_status: { processing: 1, ready: 2 }, done: false }, 'not done while a document is processing');
      await ctx.services.sql("update documents set status = 'ready' where id = ?", [processing!.id]);
    });

    await t.test('bad batch requests: 4xx, nothing half-written', async (t) => {
      const refused = await createCollection({ name: 'refused', tenant_field: 'org' });
      const nothingWritten = async (what: string) => {
        t.equal(await documentTotal('refused'), 0, `${what}: no document`);
        t.same(await originalsOf(refused.id), [], `${what}: no stored file`);
        const [row] = await ctx.services.sql<{ count: string | number }>('select count(*) as count from document_batches where collection_id = ?', [refused.id]);
        t.equal(Number(row!.count), 0, `${what}: no batch`);
      };
      const two = [{ filename: 'a.txt', content: TEXTS.a, contentType: 'text/plain' }, { filename: 'b.txt', content: TEXTS.b, contentType: 'text/plain' }];
      assertError(t, await postBatch('refused', multipartUpload([], { metadata: '{"org":"x"}' })), 400, /No files/, 'no files');
      await nothingWritten('no files');
      assertError(t, await postBatch('refused', multipartUpload(two, { metadata: 'not json' })), 400, /metadata/, 'bad metadata');
      await nothingWritten('bad metadata');
      assertError(t, await postBatch('refused', multipartUpload(two)), 400, /\borg\b/, 'tenant field missing');
      await nothingWritten('tenant field missing');
      assertError(t, await postBatch('refused', multipartUpload(two, { metadata: '{"org":"x"}', on_duplicate: 'merge' })), 400, /on_duplicate/, 'unknown on_duplicate');
      await nothingWritten('unknown on_duplicate');
      assertError(t, await postBatch('refused', multipartUpload([...two, { filename: 'c.txt', content: TEXTS.c, field: 'attachment' }], { metadata: '{"org":"x"}' })), 400, /"file"/, 'a file in another part');
      await nothingWritten('a file in another part');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/refused/documents/batch', headers: admin, payload: { files: [] } }), 415, /multipart/, 'JSON body');
      assertError(t, await postBatch('nope', multipartUpload(two)), 404, /nope/, 'unknown collection');
      const allRefused = await postBatch('refused', multipartUpload([{ filename: 'x.exe', content: Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03, 0x00, 0x00, 0x00]), contentType: 'application/x-msdownload' }], { metadata: '{"org":"x"}' }));
      t.equal(allRefused.statusCode, 202, 'a batch whose every file is refused still answers per file');
      t.same(allRefused.json().documents.map((entry: any) => entry.status), ['rejected']);
      t.equal(await documentTotal('refused'), 0);
      t.same(await originalsOf(refused.id), []);
    });

    await t.test('unknown batch ids: 404; bad ids: 400', async (t) => {
      const unknown = '00000000-0000-4000-8000-000000000000';
      assertError(t, await app.inject({ url: `/v1/collections/mixed/batches/${unknown}`, headers: admin }), 404, new RegExp(unknown), 'get');
      assertError(t, await app.inject({ url: `/v1/collections/mixed/batches/${unknown}/status`, headers: admin }), 404, undefined, 'status');
      assertError(t, await app.inject({ method: 'DELETE', url: `/v1/collections/mixed/batches/${unknown}`, headers: admin }), 404, undefined, 'delete');
      assertError(t, await app.inject({ url: '/v1/collections/mixed/batches/not-a-uuid', headers: admin }), 400, undefined, 'not a uuid');
      assertError(t, await app.inject({ url: `/v1/collections/refused/batches/${batchId}`, headers: admin }), 404, undefined, 'a batch of another collection');
      const reader = bearer((await createApiKey(app, admin.cookie, { name: 'reader', scopes: ['document:read'] })).key);
      t.equal((await app.inject({ url: `/v1/collections/mixed/batches/${batchId}/status`, headers: reader })).statusCode, 200, 'document:read reads batches');
      assertError(t, await app.inject({ method: 'DELETE', url: `/v1/collections/mixed/batches/${batchId}`, headers: reader }), 403, 'API key missing required scope: document:delete', 'delete needs document:delete');
    });

    await t.test('duplicates: skip (default), replace, keep; per tenant', async (t) => {
      const dupes = await createCollection({ name: 'dupes' });
      const first = await postOne('dupes', 'one.txt', TEXTS.a);
      t.equal(first.statusCode, 202);
      t.equal(first.json().duplicate, false);
      const again = await postOne('dupes', 'renamed.txt', TEXTS.a, { metadata: '{"v":2}' });
      t.equal(again.statusCode, 200, 'a skipped duplicate is 200: nothing new was accepted');
      t.match(again.json(), { id: first.json().id, filename: 'one.txt', duplicate: true, metadata: {} }, 'the existing document is returned');
      t.equal((await originalsOf(dupes.id)).length, 1, 'the second copy is not kept');

      const batch = await postBatch('dupes', multipartUpload([
        { filename: 'copy.txt', content: TEXTS.a, contentType: 'text/plain' },
        // Files, not rows: the copy is written before it is found to be one, then removed.
        { filename: 'glacier.txt', content: LARGE_B, contentType: 'text/plain' },
        { filename: 'glacier-again.txt', content: LARGE_B, contentType: 'text/plain' },
      ]));
      t.equal(batch.statusCode, 202);
      const entries = batch.json().documents;
      t.match(entries[0], { id: first.json().id, duplicate: true });
      t.match(entries[1], { filename: 'glacier.txt', duplicate: false, status: 'pending' });
      t.match(entries[2], { id: entries[1].id, duplicate: true }, 'a copy within the same batch is a duplicate of the first');
      t.equal(await documentTotal('dupes'), 2);
      t.equal((await originalsOf(dupes.id)).length, 2);
      await waitForIngestion(app, 'dupes', admin);
      const batchView = (await app.inject({ url: `/v1/collections/dupes/batches/${batch.json().batch_id}`, headers: admin })).json();
      t.same(batchView.documents.map((entry: any) => entry.duplicate), [true, false, true]);
      t.match(batchView.by_status, { ready: 3 });

      const replaced = await postOne('dupes', 'one-v2.txt', TEXTS.a, { on_duplicate: 'replace', metadata: '{"v":2}' });
      t.equal(replaced.statusCode, 202);
      t.match(replaced.json(), { filename: 'one-v2.txt', duplicate: false, replaced_document_ids: [first.json().id], metadata: { v: 2 } });
      assertError(t, await app.inject({ url: `/v1/collections/dupes/documents/${first.json().id}`, headers: admin }), 404, undefined, 'the replaced document is gone');
      await waitForIngestion(app, 'dupes', admin);
      const hits = (await query('dupes', 'lighthouse wick storm')).results;
      t.same([...new Set(hits.map((hit: any) => hit.document_id))], [replaced.json().id], 'only the new copy is searchable');
      t.equal((await originalsOf(dupes.id)).length, 2, 'the old file was removed');

      const kept = await postOne('dupes', 'one-v3.txt', TEXTS.a, { on_duplicate: 'keep' });
      t.equal(kept.statusCode, 202);
      t.equal(kept.json().duplicate, false);
      t.equal(await documentTotal('dupes'), 3, 'keep stores a second copy');
      assertError(t, await postOne('dupes', 'x.txt', TEXTS.c, { on_duplicate: 'SKIP' }), 400, /on_duplicate must be one of skip, replace, keep/, 'unknown on_duplicate');

      await createCollection({ name: 'tenants', tenant_field: 'org' });
      const acme = await postOne('tenants', 'shared.txt', TEXTS.c, { metadata: '{"org":"acme"}' });
      const globex = await postOne('tenants', 'shared.txt', TEXTS.c, { metadata: '{"org":"globex"}' });
      t.equal(acme.statusCode, 202);
      t.equal(globex.statusCode, 202, 'the same file for another tenant is not a duplicate');
      t.not(globex.json().id, acme.json().id, 'one tenant never receives another tenant\'s document');
      t.equal((await postOne('tenants', 'shared.txt', TEXTS.c, { metadata: '{"org":"acme"}' })).json().id, acme.json().id);
      await waitForIngestion(app, 'tenants', admin);
    });

    await t.test('a failed copy does not count as a duplicate', async (t) => {
      const retry = await createCollection({ name: 'retry' });
      const first = await postOne('retry', 'lost.txt', TEXTS.b);
      await waitForIngestion(app, 'retry', admin);
      await ctx.services.sql(`update documents set status = 'failed', error = 'parsing failed: test' where id = ?`, [first.json().id]);
      const second = await postOne('retry', 'lost.txt', TEXTS.b);
      t.equal(second.statusCode, 202, 'skip uploads again over a failed copy');
      t.not(second.json().id, first.json().id);
      await waitForIngestion(app, 'retry', admin);
      t.equal(retry.name, 'retry');
    });

    await t.test('reprocess a document and a collection without re-uploading', async (t) => {
      await createCollection({ name: 'rechunk', chunk_strategy: 'recursive' });
      const text = Array.from({ length: 6 }, (_, index) => `Paragraph ${index} about tides and harbour cranes in some detail.`).join('\n\n');
      const uploaded = await postOne('rechunk', 'tides.txt', text);
      const other = await postOne('rechunk', 'bees.txt', TEXTS.c);
      await waitForIngestion(app, 'rechunk', admin);
      const id = uploaded.json().id as string;
      const before = (await app.inject({ url: `/v1/collections/rechunk/documents/${id}/chunks`, headers: admin })).json();

      // Workers paused: otherwise one may finish the reprocessing before the second request arrives.
      await ctx.services.ingestion.stop();
      const response = await app.inject({ method: 'POST', url: `/v1/collections/rechunk/documents/${id}/reprocess`, headers: admin });
      t.equal(response.statusCode, 202);
      t.match(response.json(), { id, status: 'pending', progress: { message: /reprocess/ } });
      assertError(t, await app.inject({ method: 'POST', url: `/v1/collections/rechunk/documents/${id}/reprocess`, headers: admin }), 409, /already queued/, 'reprocess while pending');
      await ctx.services.start();
      await waitForIngestion(app, 'rechunk', admin);
      const after = (await app.inject({ url: `/v1/collections/rechunk/documents/${id}/chunks`, headers: admin })).json();
      t.same(after.data.map((chunk: any) => chunk.text), before.data.map((chunk: any) => chunk.text), 'the same chunks again');
      t.equal((await stats('rechunk')).vectors, (await stats('rechunk')).chunks, 'no leftover vectors');

      const patched = await app.inject({ method: 'PATCH', url: '/v1/collections/rechunk', headers: admin, payload: { chunk_strategy: 'paragraph' } });
      t.equal(patched.statusCode, 200);
      const all = await app.inject({ method: 'POST', url: '/v1/collections/rechunk/reprocess', headers: admin });
      t.equal(all.statusCode, 202);
      t.same(all.json(), { queued: 2, skipped: 0, retried_now: 0 });
      const documents = await waitForIngestion(app, 'rechunk', admin);
      t.same(documents.map((document) => document.status), ['ready', 'ready']);
      const rechunked = (await app.inject({ url: `/v1/collections/rechunk/documents/${id}/chunks`, headers: admin })).json();
      t.ok(rechunked.total >= 1);
      const finalStats = await stats('rechunk');
      t.equal(finalStats.vectors, finalStats.chunks, 'one vector per chunk after reprocessing');
      t.ok((await query('rechunk', 'harbour cranes')).results.some((hit: any) => hit.document_id === id));
      t.equal(other.statusCode, 202);

      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/rechunk/documents/00000000-0000-4000-8000-000000000000/reprocess', headers: admin }), 404, undefined, 'unknown document');
      assertError(t, await app.inject({ method: 'POST', url: `/v1/collections/mixed/documents/${id}/reprocess`, headers: admin }), 404, undefined, 'a document of another collection');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/nope/reprocess', headers: admin }), 404, /nope/, 'unknown collection');
    });

    await t.test('hostile files in one batch: each fails or is refused, the others are unaffected', async (t) => {
      // An app of its own, with the default upload limit.
      const roomy = await buildTestApp(backend);
      t.teardown(() => roomy.close());
      const headers = { cookie: await setupAdmin(roomy.app) };
      t.equal((await roomy.app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'hostile' } })).statusCode, 201);
      const pdf = await buildPdf({ pages: [{ heading: 'Berths', paragraphs: ['Berth four takes the evening ferry.'] }] });
      const body = multipartUpload([
        { filename: 'good.txt', content: TEXTS.a, contentType: 'text/plain' },
        { filename: 'malformed.pdf', content: '%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage without xref\n', contentType: 'application/pdf' },
        { filename: 'bomb.docx', content: await buildZipBomb(), contentType: 'application/octet-stream' },
        { filename: 'photo.docx', content: buildPng(), contentType: 'application/octet-stream' },
        { filename: 'berths.txt', content: pdf, contentType: 'text/plain' },
      ]);
      const response = await roomy.app.inject({ method: 'POST', url: '/v1/collections/hostile/documents/batch', headers: { ...headers, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202);
      const entries = response.json().documents;
      t.same(entries.map((entry: any) => entry.status), ['pending', 'pending', 'pending', 'rejected', 'pending']);
      t.match(entries[3].error, { status: 415, detail: /photo\.docx.*PNG/ }, 'a picture named .docx is refused by its content');
      t.equal(entries[4].content_type, 'application/pdf', 'a PDF named .txt is read as a PDF');
      await waitForIngestion(roomy.app, 'hostile', headers);
      const view = (await roomy.app.inject({ url: `/v1/collections/hostile/batches/${response.json().batch_id}`, headers })).json();
      t.same(view.documents.map((entry: any) => entry.status), ['ready', 'failed', 'failed', 'rejected', 'ready']);
      t.match(view.documents[1].error, /^parsing failed: /);
      t.match(view.documents[2].error, /^parsing failed: .*zip bomb/);
      t.match(view.by_status, { ready: 2, failed: 2, rejected: 1 });
      const hits = (await roomy.app.inject({ method: 'POST', url: '/v1/collections/hostile/query', headers, payload: { query: 'evening ferry berth', search_mode: 'keyword' } })).json();
      t.ok(hits.results.some((hit: any) => hit.document_id === entries[4].id), 'the renamed PDF is searchable');
    });

    await t.test('one request keeps at most 8 MB of small files in memory; the rest go to the file store', async (t) => {
      const paused = await buildTestApp(backend, {}, { startWorkers: false });
      t.teardown(() => paused.close());
      const headers = { cookie: await setupAdmin(paused.app) };
      const created = await paused.app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'budget' } });
      t.equal(created.statusCode, 201);
      // 140 distinct files of 60 KB: 136 fit in 8 MB.
      const files = Array.from({ length: 140 }, (_, index) => ({
        filename: `part-${index}.txt`, content: `Part ${index} of the manifest. ${'cargo '.repeat(10_235)}`.slice(0, 61_440), contentType: 'text/plain',
      }));
      const body = multipartUpload(files);
      const response = await paused.app.inject({ method: 'POST', url: '/v1/collections/budget/documents/batch', headers: { ...headers, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body.slice(0, 300));
      t.equal(response.json().documents.filter((entry: any) => entry.status === 'pending').length, 140, 'every file is accepted');
      const stored = await storedOriginals(paused.services, created.json().id);
      t.equal(stored.length, 140, 'every original is stored');
      t.equal(stored.filter((entry) => entry.startsWith('database:')).length, 136, 'the first 8 MB in the database');
    });

    await t.test('delete a batch: its documents, chunks, vectors and files go', async (t) => {
      const before = await stats('mixed');
      t.ok(before.chunks > 0);
      const response = await app.inject({ method: 'DELETE', url: `/v1/collections/mixed/batches/${batchId}`, headers: admin });
      t.equal(response.statusCode, 204);
      t.equal(response.body, '');
      const after = await stats('mixed');
      t.match(after, { documents: 0, chunks: 0, vectors: 0 });
      t.same(await originalsOf(mixed.id), [], 'stored files removed');
      t.same((await query('mixed', 'lighthouse wick glaciers bees')).results, [], 'nothing searchable');
      for (const id of acceptedIds) assertError(t, await app.inject({ url: `/v1/collections/mixed/documents/${id}`, headers: admin }), 404, undefined, 'document gone');
      assertError(t, await app.inject({ url: `/v1/collections/mixed/batches/${batchId}`, headers: admin }), 404, undefined, 'the batch is gone');
    });
  });
}
