/**
 * `POST /v1/collections/{name}/reprocess`: every ready or failed document goes back to the queue,
 * those already pending or processing are skipped, and the two counts add up to the documents it
 * looked at, even when a worker finishes a requeued document at once.
 */
import t from 'tap';
import { reprocessCollection } from '../../src/documents/reprocessing.js';
import type { SqlRunner } from '../../src/plugins.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const TEXTS = [
  'The lighthouse keeper trims the lamp at dusk.',
  'Fishing boats return to the marina at noon.',
  'Bees keep the harbour gardens in flower.',
];

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend, {}, { startWorkers: false });
    await createTestCollection(app, admin, { name: 'harbour' });
    for (const [index, content] of TEXTS.entries()) {
      const body = multipartUpload([{ filename: `note-${index}.txt`, content, contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/harbour/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
    }
    const reprocess = async () => {
      const response = await app.inject({ method: 'POST', url: '/v1/collections/harbour/reprocess', headers: admin });
      t.equal(response.statusCode, 202, response.body);
      return response.json() as { queued: number; skipped: number };
    };

    await t.test('documents still pending are skipped, not queued twice', async (t) => {
      t.same(await reprocess(), { queued: 0, skipped: 3, retried_now: 0 });
      const [jobs] = await services.sql<{ count: string | number }>('select count(*) as count from jobs');
      t.equal(Number(jobs!.count), 3, 'one job a document');
    });

    await t.test('ready documents are queued; a second call while they run adds up to the same three', async (t) => {
      await services.start();
      await waitForIngestion(app, 'harbour', admin);
      t.same(await reprocess(), { queued: 3, skipped: 0, retried_now: 0 });
      // Workers may finish some before this call: those are queued again, the rest skipped.
      const again = await reprocess();
      t.equal(again.queued + again.skipped, 3, `queued ${again.queued} + skipped ${again.skipped}`);
      const documents = await waitForIngestion(app, 'harbour', admin);
      t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready']);
    });

    await t.test('a requeued document finished by a worker at once is not taken off the skipped ones', async (t) => {
      const collection = (await services.collections.find('harbour'))!;
      // Workers that finish every requeued document between the requeue and anything after it.
      const finishingWorkers = Object.assign(async (query: string, params?: unknown[]) => {
        if (!query.includes('update documents')) await services.sql("update documents set status = 'ready' where collection_id = ?", [collection.id]);
        return services.sql(query, params);
      }, { dialect: services.sql.dialect, transaction: services.sql.transaction }) as SqlRunner;
      t.same(await reprocessCollection(finishingWorkers, services.jobs, collection), { queued: 3, skipped: 0, retried_now: 0 });
      await waitForIngestion(app, 'harbour', admin);
    });
  });
}
