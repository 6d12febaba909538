/**
 * PostgreSQL goes away while documents are being embedded, and comes back. The documents were
 * recorded as failures the database could not record, so their jobs sat `running` until their
 * lease lapsed and were then taken over as a crashed process's: an attempt used up, claimed one at
 * a time from then on, and the documents said "out of memory, killed or crashed". Now the jobs
 * wait for the database and are queued again as soon as it answers, their attempt not counted.
 *
 * The database is reached through a TCP proxy the test cuts; an embedding provider that answers
 * slowly holds the documents in embedding while it does.
 */
import t from 'tap';
import pg from 'pg';
import { logLines } from '../support/log-lines.js';
import { startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, createTestCollection, multipartUpload, scratchDatabaseBehindProxy, setupAdmin, waitForIngestion } from '../support/test-app.js';

if (!process.env.TEST_DATABASE_URL) {
  t.pass('a database that goes away needs PostgreSQL (TEST_DATABASE_URL)');
} else {
  t.test('postgresql: documents being embedded when the database goes away are ingested once it is back', async (t) => {
    const { url, direct, proxy } = await scratchDatabaseBehindProxy(t);
    const fake = await startProviderFake({ apiKey: 'unused', latencyMs: 1500 });
    t.teardown(() => fake.close());
    const { lines, stream: logStream } = logLines();
    // A lease shorter than the outage: the process's own sweep for lapsed leases must not take its waiting jobs for a crashed process's.
    const ctx = await buildTestApp('postgresql', { jobLeaseMs: 1000 }, { replicaOf: url, logStream });
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const admin = { cookie: await setupAdmin(app) };
    await createTestCollection(app, admin, { name: 'outage', embedding_provider: 'openai_compatible', embedding_model: 'nomic-embed-text', dimension: 768, embedding_base_url: fake.baseUrl('compatible') });
    const files = Array.from({ length: 6 }, (_, index) => ({ filename: `tide-${index}.txt`, content: `Tide table ${index} for the harbour lighthouse.`, contentType: 'text/plain' }));
    const upload = multipartUpload(files);
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections/outage/documents/batch', headers: { ...admin, ...upload.headers }, payload: upload.payload })).statusCode, 202);

    for (let waited = 0; fake.inFlight === 0; waited += 10) {
      if (waited > 20_000) throw new Error('the documents never reached embedding');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    t.ok(lines.some((line) => line.msg === 'the database is unavailable: ingestion jobs wait for it, to be queued again once it answers'), 'the jobs wait for the database');
    await proxy.restore();

    const documents = await waitForIngestion(app, 'outage', admin, 30_000);
    t.same(documents.map((document) => document.status), files.map(() => 'ready'), 'every document is ingested once the database is back');
    const client = new pg.Client({ connectionString: direct });
    await client.connect();
    t.teardown(() => client.end());
    const jobs = (await client.query<{ attempts: number; abandoned: number }>('select attempts, abandoned from jobs')).rows;
    t.equal(jobs.length, files.length);
    t.same(jobs.map((job) => job.abandoned), files.map(() => 0), 'none taken for the jobs of a crashed process');
    t.same(jobs.map((job) => job.attempts), files.map(() => 1), 'and the interrupted attempt does not count');
    t.ok(lines.some((line) => line.msg === 'the database answers again: ingestion jobs that waited for it are queued again'));
    const claimFailures = lines.filter((line) => line.msg?.startsWith('could not claim ingestion jobs'));
    t.ok(claimFailures.length <= 1, `failed claims are logged once for the outage, not each second (${claimFailures.length})`);
    t.ok(claimFailures.every((line) => line.level === 40), 'as a warning');
    const search = await app.inject({ method: 'POST', url: '/v1/collections/outage/query', headers: admin, payload: { query: 'lighthouse', search_mode: 'keyword', top_k: 10 } });
    t.equal(search.json().results.length, files.length, 'each document is found once');
  });
}
