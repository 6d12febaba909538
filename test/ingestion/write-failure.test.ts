/**
 * A document whose chunks cannot be written fails alone, at the indexing stage, and nothing of it
 * stays searchable; the documents claimed with it end ready. When no document of a batch can be
 * written the cause is not a document (a store that is away), and the batch is retried. The
 * vector store refuses the writes of documents whose metadata says so.
 */
import t from 'tap';
import type { VectorRecord } from '../../src/plugins.js';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend, {}, { startWorkers: false });
    t.teardown(() => ctx.close());
    const headers = { cookie: await setupAdmin(ctx.app) };
    const { vectorStore } = ctx.services.indexes;
    const upsert = vectorStore.upsert.bind(vectorStore);
    let refuseEverything = false;
    /** Run when a write is refused, before the refusal: what queries see of the half-written document. */
    let onRefusal = async () => undefined as unknown;
    vectorStore.upsert = async (records: VectorRecord[]) => {
      if (refuseEverything || records.some((record) => record.metadata.refused === true)) {
        await onRefusal();
        throw new Error('vector store refused the write');
      }
      return upsert(records);
    };
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'refusals' } });
    t.equal(created.statusCode, 201);
    const upload = async (filename: string, text: string, metadata: Record<string, unknown> = {}) => {
      const body = multipartUpload([{ filename, content: text, contentType: 'text/plain' }], { metadata: JSON.stringify(metadata) });
      const response = await ctx.app.inject({ method: 'POST', url: '/v1/collections/refusals/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const read = async (id: string) => (await ctx.app.inject({ url: `/v1/collections/refusals/documents/${id}`, headers })).json();
    const found = async (query: string, mode: string, skipCache = true) => (await ctx.app.inject({
      method: 'POST', url: '/v1/collections/refusals/query', headers, payload: { query, search_mode: mode, skip_cache: skipCache },
    })).json().results as Array<{ document_id: string }>;

    await t.test('one document cannot be written: it fails alone, nothing of it is searchable', async (t) => {
      const first = await upload('first.txt', 'Glassblowers shape molten sand into bowls.');
      const refused = await upload('refused.txt', 'Beekeepers smoke the hive before lifting its frames.', { refused: true });
      const last = await upload('last.txt', 'Cartographers draw coastlines from survey notes.');
      await ctx.services.start();
      await waitForIngestion(ctx.app, 'refusals', headers);
      t.match(await read(first), { status: 'ready', error: null });
      t.match(await read(last), { status: 'ready', error: null });
      const failed = await read(refused);
      t.equal(failed.status, 'failed');
      t.match(failed.error, /^indexing failed: vector store refused the write/, 'the stage and the reason');
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        t.notOk((await found('beekeepers smoke hive frames', mode)).some((result) => result.document_id === refused), `${mode}: nothing of the failed document`);
        t.ok((await found('glassblowers molten sand', mode)).some((result) => result.document_id === first), `${mode}: its neighbour is found`);
      }
      const [left] = await ctx.services.sql<{ count: string | number }>('select count(*) as count from chunks where document_id = ?', [refused]);
      t.equal(Number(left!.count), 0, 'no chunk rows of the failed document');
    });

    await t.test('an answer cached while a document was half-written is not served after its failure', async (t) => {
      const lonely = await ctx.app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'lonely' } });
      t.equal(lonely.statusCode, 201);
      const ask = async (skipCache: boolean) => (await ctx.app.inject({
        method: 'POST', url: '/v1/collections/lonely/query', headers, payload: { query: 'shepherds count sheep', search_mode: 'keyword', skip_cache: skipCache },
      })).json().results as Array<{ document_id: string }>;
      let seenWhileHalfWritten: boolean | undefined;
      onRefusal = async () => {
        // Not skipping the cache: the answer is kept under the collection's current write version.
        seenWhileHalfWritten ??= (await ask(false)).length > 0;
      };
      const body = multipartUpload([{ filename: 'sheep.txt', content: 'Shepherds count sheep at the gate every evening.', contentType: 'text/plain' }], { metadata: JSON.stringify({ refused: true }) });
      const accepted = await ctx.app.inject({ method: 'POST', url: '/v1/collections/lonely/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
      t.equal(accepted.statusCode, 202, accepted.body);
      const id = accepted.json().id as string;
      const deadline = Date.now() + 30_000;
      while (!/\(will retry\)$/.test((await ctx.app.inject({ url: `/v1/collections/lonely/documents/${id}`, headers })).json().progress?.message ?? '')) {
        if (Date.now() > deadline) throw new Error('the document was not set back to pending');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      onRefusal = async () => undefined;
      t.equal(seenWhileHalfWritten, true, 'a query while it was half-written found it');
      t.same(await ask(false), [], 'the answer cached then is not served after the failure');
    });

    await t.test('no document of a batch can be written: the batch waits to be retried', async (t) => {
      await ctx.services.ingestion.stop();
      refuseEverything = true;
      const one = await upload('one.txt', 'Lamplighters walked the streets at dusk.');
      const two = await upload('two.txt', 'Ferrymen crossed the river at dawn.');
      await ctx.services.start();
      const retrying = async (id: string) => /\(will retry\)$/.test((await read(id)).progress?.message ?? '');
      const deadline = Date.now() + 30_000;
      while (!(await retrying(one)) || !(await retrying(two))) {
        if (Date.now() > deadline) throw new Error('the batch was not set back to pending');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await ctx.services.ingestion.stop();
      for (const id of [one, two]) {
        t.match(await read(id), { status: 'pending', error: null, progress: { message: /vector store refused the write \(will retry\)$/ } }, 'pending, says why and that it will retry');
      }
      const [left] = await ctx.services.sql<{ count: string | number }>('select count(*) as count from chunks where document_id = any(?::uuid[])', [[one, two]]);
      t.equal(Number(left!.count), 0, 'no chunk rows while they wait');
      for (const mode of ['keyword', 'hybrid']) {
        t.notOk((await found('lamplighters streets dusk', mode)).some((result) => result.document_id === one), `${mode}: nothing of a waiting document`);
      }

      refuseEverything = false;
      await ctx.services.start();
      const documents = await waitForIngestion(ctx.app, 'refusals', headers);
      t.same(documents.filter((document) => [one, two].includes(document.id)).map((document) => document.status), ['ready', 'ready'], 'the retry succeeds once the store is back');
    });
  });
}
