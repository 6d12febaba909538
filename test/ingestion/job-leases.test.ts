/**
 * A claim takes jobs of several collections, run one collection after another. While a long
 * document of the first runs, the others wait in this process: their leases must be renewed too,
 * or the lease sweep (PostgreSQL, where replicas share the queue) takes them for a stopped
 * process's and ingests them a second time. The lease is shortened (JOB_LEASE_S 1) so that the
 * first collection's ingestion, held for 3 s, outlasts it several times.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { adminTestApp, createTestCollection, multipartUpload, waitForIngestion } from '../support/test-app.js';

if (!process.env.TEST_DATABASE_URL) {
  t.pass('the lease sweep runs on PostgreSQL only (TEST_DATABASE_URL unset)');
} else {
  t.test('postgresql', async (t) => {
    const ctx = await adminTestApp(t, 'postgresql', { jobLeaseMs: 1000, workerConcurrency: 1 }, { startWorkers: false });
    const { app, admin, services } = ctx;
    const slow = await createTestCollection(app, admin, { name: 'slow' });
    await createTestCollection(app, admin, { name: 'waiting' });
    const upload = async (collection: string, filename: string) => {
      const body = multipartUpload([{ filename, content: `A note about ${filename} and its harbour cranes.`, contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202);
    };
    // Queued before the workers start, so that one claim takes both collections' jobs.
    await upload('slow', 'first.txt');
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await upload('waiting', name);

    const { vectorStore } = services.indexes;
    const upsert = vectorStore.upsert;
    let held = false;
    vectorStore.upsert = async (items) => {
      if (!held && items.some((item) => item.collectionId === slow.id)) {
        held = true;
        await sleep(3000);
      }
      return upsert.call(vectorStore, items);
    };
    t.teardown(() => { vectorStore.upsert = upsert; });
    await services.start();
    await waitForIngestion(app, 'slow', admin);
    const documents = await waitForIngestion(app, 'waiting', admin);
    vectorStore.upsert = upsert;
    t.ok(held, 'the first collection was held past the lease');
    t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready']);

    const jobs = await services.sql<{ attempts: number; abandoned: number; status: string }>('select attempts, abandoned, status from jobs order by created_at');
    t.equal(jobs.length, 4);
    t.same(jobs.map((job) => [job.status, job.attempts, job.abandoned]), jobs.map(() => ['done', 1, 0]), 'every job ran once, none taken for abandoned');
  });
}
