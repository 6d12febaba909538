/**
 * A process that dies in the middle of ingestion loses nothing: after a restart over the same
 * database and data directory every document ends `ready` (or `failed` with the stage named),
 * nothing stays pending or processing, half-written chunks are replaced, and queries find the
 * documents. A document whose file cannot be parsed fails alone; the others in the run finish.
 *
 * The crash is simulated on an app whose workers never started: its uploads stay pending, then
 * SQL marks some jobs `running` under a dead worker's lock, one document `processing`, and leaves
 * a stale chunk of that document in the table and both indexes, as an interrupted run would.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';
import { openDatabase } from '../../src/db/database.js';
import { insertChunks } from '../../src/documents/chunk-store.js';
import { assertError } from '../support/assertions.js';
import { buildTestApp, createScratchDatabase, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';

const DOCUMENTS = 20;
const DEAD_WORKER = 'crashed-host:4242:deadbeef';

/** Document n: a unique marker word, and for every third one enough text for several chunks. */
function documentText(n: number): string {
  const head = `Report ${n} mentions the marker uniqueword${n} and the shared subject of harbour logistics.`;
  if (n % 3 !== 0) return head;
  const paragraphs = Array.from({ length: 12 }, (_, index) =>
    `Section ${index} of report ${n}: cranes, containers and tides are scheduled together so the quay never idles; paragraph ${index} adds detail.`);
  return [head, ...paragraphs].join('\n\n');
}

async function localEmbedding(text: string): Promise<Float32Array> {
  const model = localEmbeddingPlugin.create({ dimension: 384 }, {});
  return Float32Array.from((await model.embed([text], 'document')).vectors[0]!);
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const scratch = backend === 'postgresql' ? await createScratchDatabase(process.env.TEST_DATABASE_URL!, { migrated: true }) : undefined;
    const database = await openDatabase({ databaseUrl: scratch?.url });
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-restart-'));
    let second: Awaited<ReturnType<typeof buildTestApp>> | undefined;
    t.teardown(async () => {
      // The app first, then the database it used.
      await second?.close();
      await database.close();
      await scratch?.drop();
      await rm(dataDir, { recursive: true, force: true });
    });

    // ---- First life: uploads accepted, no worker ever runs them. ----
    const first = await buildTestApp(backend, {}, { startWorkers: false, dataDir, database });
    const cookie = await setupAdmin(first.app);
    const admin = { cookie };
    const created = await first.app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'restart', chunk_size: 400, chunk_overlap: 0 } });
    t.equal(created.statusCode, 201, created.body);

    const documentIds: string[] = [];
    for (let n = 0; n < DOCUMENTS; n++) {
      const upload = multipartUpload([{ filename: `report-${n}.txt`, content: documentText(n), contentType: 'text/plain' }], { metadata: JSON.stringify({ n }) });
      const response = await first.app.inject({ method: 'POST', url: '/v1/collections/restart/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
      t.equal(response.statusCode, 202, response.body);
      t.equal(response.json().status, 'pending');
      documentIds.push(response.json().id);
    }
    // One more whose original (small, so a row of document_originals) is lost before it is parsed.
    const broken = multipartUpload([{ filename: 'lost.txt', content: 'this file will be gone', contentType: 'text/plain' }]);
    const brokenResponse = await first.app.inject({ method: 'POST', url: '/v1/collections/restart/documents', headers: { ...admin, ...broken.headers }, payload: broken.payload });
    t.equal(brokenResponse.statusCode, 202, brokenResponse.body);
    const brokenId = brokenResponse.json().id as string;

    const { sql } = first.services;
    const lost = await sql<{ document_id: string }>('delete from document_originals where document_id = ? returning document_id', [brokenId]);
    t.equal(lost.length, 1, 'the small original was a row');

    await new Promise((resolve) => setTimeout(resolve, 300));
    const statuses = await sql<{ status: string; count: number | string }>('select status, count(*) as count from documents group by status');
    t.same(statuses.map((row) => [row.status, Number(row.count)]), [['pending', DOCUMENTS + 1]], 'without workers every document stays pending');

    // ---- The crash: three jobs were running under a worker that died; one document was mid-way. ----
    const crashed = [documentIds[3]!, documentIds[7]!, brokenId];
    const marked = await sql<{ id: string }>(
      `update jobs set status = 'running', locked_by = ?, locked_at = now() - interval '10 minutes', attempts = 1, updated_at = now()
       where document_id = any(?::uuid[]) returning id`,
      [DEAD_WORKER, crashed],
    );
    t.equal(marked.length, 3, 'three jobs marked running by the dead worker');
    const processingId = documentIds[3]!;
    await sql(`update documents set status = 'processing', progress = ?::jsonb where id = ?`,
      [JSON.stringify({ stage: 'indexing', percent: 90, message: 'indexing 5 chunks' }), processingId]);
    // A chunk the interrupted run had written (row and index entries) under an index the new run will not produce.
    const staleText = 'stalezzz leftover from the interrupted run';
    const [collection] = await sql<{ id: string }>("select id from collections where name = 'restart'");
    const [staleKey] = await insertChunks(sql, collection!.id, [{
      id: `${processingId}:99`, documentId: processingId, chunkIndex: 99, text: staleText, metadata: { n: 3 }, tenant: null,
    }]);
    await first.services.indexes.keywordIndex.add(collection!.id, [{ key: staleKey!, text: staleText, metadata: { n: 3 }, tenant: null }]);
    await first.services.indexes.vectorStore.upsert([{
      key: staleKey!, collectionId: collection!.id, documentId: processingId, embedding: await localEmbedding(staleText), metadata: { n: 3 }, tenant: null,
    }]);
    const staleHit = await first.app.inject({ method: 'POST', url: '/v1/collections/restart/query', headers: admin, payload: { query: 'stalezzz', search_mode: 'keyword' } });
    t.same(staleHit.json().results.map((result: { id: string }) => result.id), [`${processingId}:99`], 'before the restart the stale chunk is searchable');

    // The process goes away; the database and the data directory stay.
    await first.close();

    // ---- Second life: same database, same files, workers on. ----
    second = await buildTestApp(backend, {}, { dataDir, database });
    const { app } = second;
    const whoami = await app.inject({ url: '/v1/auth/whoami', headers: admin });
    t.equal(whoami.statusCode, 200, 'the session survives the restart');

    const documents = await waitForIngestion(app, 'restart', admin, 120_000);
    t.equal(documents.length, DOCUMENTS + 1, 'every document listed');
    const byId = new Map(documents.map((document) => [document.id, document]));
    t.same(documents.filter((document) => document.status === 'pending' || document.status === 'processing'), [], 'nothing pending or processing');

    await t.test('every readable document is ready, with its chunks', async (t) => {
      for (const [n, id] of documentIds.entries()) {
        const document = byId.get(id)!;
        t.equal(document.status, 'ready', `report ${n} ready${document.error ? ` (${document.error})` : ''}`);
        t.equal(document.error, null, `report ${n}: no error`);
        t.ok(document.chunk_count > 0, `report ${n}: chunk_count ${document.chunk_count} > 0`);
        if (n % 3 === 0) t.ok(document.chunk_count > 1, `report ${n}: long text, several chunks`);
        const chunks = await app.inject({ url: `/v1/collections/restart/documents/${id}/chunks?limit=500`, headers: admin });
        const page = chunks.json() as { total: number; data: Array<{ chunk_index: number; text: string }> };
        t.equal(page.total, document.chunk_count, `report ${n}: chunk rows equal chunk_count`);
        t.same(page.data.map((chunk) => chunk.chunk_index), Array.from({ length: document.chunk_count }, (_, index) => index), `report ${n}: chunks 0..${document.chunk_count - 1}, no leftovers`);
      }
      const stats = (await app.inject({ url: '/v1/collections/restart/stats', headers: admin })).json();
      const expectedChunks = documentIds.reduce((sum, id) => sum + byId.get(id)!.chunk_count, 0);
      t.equal(stats.chunks, expectedChunks, 'the collection holds exactly the chunks of the ready documents');
      t.equal(stats.vectors, expectedChunks, 'and one vector per chunk (the stale one removed)');
      t.same(stats.documents_by_status, { pending: 0, processing: 0, ready: DOCUMENTS, failed: 1 });
    });

    await t.test('the document whose file was lost failed at parsing, alone', async (t) => {
      const document = byId.get(brokenId)!;
      t.equal(document.status, 'failed');
      t.match(document.error, /^parsing failed: /, `error names the stage: ${document.error}`);
      t.equal(document.chunk_count, 0);
      const reprocess = await second!.app.inject({ method: 'POST', url: `/v1/collections/restart/documents/${brokenId}/reprocess`, headers: admin });
      assertError(t, reprocess, 409, /no stored original/, 'reprocessing a document whose original is gone');
      const jobs = await second!.services.sql<{ document_id: string; status: string; locked_by: string | null }>(
        "select document_id, status, locked_by from jobs where kind = 'ingest_document'",
      );
      t.equal(jobs.length, DOCUMENTS + 1);
      for (const job of jobs) {
        t.equal(job.status, job.document_id === brokenId ? 'failed' : 'done', `job of ${job.document_id === brokenId ? 'the lost file' : 'a report'}`);
        t.not(job.locked_by, DEAD_WORKER, 'no job still held by the dead worker');
      }
    });

    await t.test('queries find the documents after the restart', async (t) => {
      for (const [n, id] of documentIds.entries()) {
        for (const mode of ['keyword', 'hybrid']) {
          const response = await app.inject({ method: 'POST', url: '/v1/collections/restart/query', headers: admin, payload: { query: `uniqueword${n}`, search_mode: mode, top_k: 1 } });
          t.equal(response.statusCode, 200);
          const [hit] = response.json().results as Array<{ id: string; document_id: string; metadata: { n: number } }>;
          t.equal(hit?.document_id, id, `${mode}: uniqueword${n} finds report ${n}`);
          t.equal(hit?.metadata.n, n, `${mode}: with its upload metadata`);
        }
      }
      const semantic = await app.inject({ method: 'POST', url: '/v1/collections/restart/query', headers: admin, payload: { query: 'harbour logistics', search_mode: 'semantic', top_k: 50 } });
      const semanticDocuments = new Set((semantic.json().results as Array<{ document_id: string }>).map((result) => result.document_id));
      t.equal(semanticDocuments.size, DOCUMENTS, 'semantic search reaches every ready document');
      t.notOk(semanticDocuments.has(brokenId), 'and nothing of the failed one');
      for (const mode of ['keyword', 'semantic', 'hybrid']) {
        const stale = await app.inject({ method: 'POST', url: '/v1/collections/restart/query', headers: admin, payload: { query: 'stalezzz leftover interrupted', search_mode: mode, top_k: 100 } });
        t.notOk((stale.json().results as Array<{ id: string }>).some((result) => result.id === `${processingId}:99`), `${mode}: the stale chunk is gone`);
      }
    });
  });
}
