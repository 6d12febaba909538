/**
 * A document that takes the process down (a file that exhausts memory) must not take the rest of
 * its batch down at every start, forever. Jobs a stopped process left running are claimed one at a
 * time afterwards, and one left running on its last attempt fails, saying so, while the others are
 * ingested. The stopped process is played by claiming jobs and never finishing them; its successor
 * takes them over at start on the embedded database, and once their lease lapsed on PostgreSQL.
 */
import t from 'tap';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend, {}, { startWorkers: false });
    t.teardown(() => ctx.close());
    const { app, services } = ctx;
    const headers = { cookie: await setupAdmin(app) };
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'abandoned' } })).statusCode, 201);
    const upload = async (filename: string, content: string) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/abandoned/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const culprit = await upload('culprit.txt', 'Lighthouse keepers trim the lamp wicks at dusk.');
    const others = [await upload('first.txt', 'Beekeepers smoke the hive before lifting frames.'), await upload('second.txt', 'Cartographers draw coastlines from survey notes.')];
    const theProcessStops = async () => {
      // The lease of the stopped process's jobs lapses (60 s) without waiting for it.
      if (backend === 'postgresql') await services.sql("update jobs set locked_at = now() - interval '2 minutes' where status = 'running'");
    };

    await t.test('jobs a stopped process left running are claimed one at a time', async (t) => {
      const claimed = await services.jobs.claim(64);
      t.equal(claimed.length, 3, 'the stopped process had claimed the three together');
      await theProcessStops();
      const [own, ...rest] = claimed.map((job) => job.id);
      const first = await services.jobs.takeOverAbandoned(backend === 'pglite', [own!]);
      t.same(first.map((job) => job.id).sort(), rest.sort(), 'a job the taking process names as its own (waiting for the database) is left to it');
      const second = await services.jobs.takeOverAbandoned(backend === 'pglite', rest);
      t.same(second.map((job) => job.id), [own], 'and taken once it is not');
      const takenOver = [...first, ...second];
      t.equal(takenOver.length, 3, 'taken over from the stopped process');
      t.match(await services.jobs.settleAbandoned(takenOver), { requeued: 3, failed: [] });
      for (const round of [1, 2, 3]) t.equal((await services.jobs.claim(64)).length, 1, `claim ${round}: one job`);
      t.same(await services.jobs.claim(64), [], 'none left');
    });

    await t.test('left running on its last attempt: that document fails, saying why; the others are ingested', async (t) => {
      // Each job was claimed twice; the culprit's second claim was its third attempt (max_attempts).
      await services.sql('update jobs set attempts = max_attempts where document_id = ?', [culprit]);
      await theProcessStops();
      await services.start();
      await waitForIngestion(app, 'abandoned', headers);
      const document = async (id: string) => (await app.inject({ url: `/v1/collections/abandoned/documents/${id}`, headers })).json();
      t.match(await document(culprit), {
        status: 'failed',
        error: 'processing failed: the service stopped while this was being processed, on its last attempt (out of memory, killed or crashed); not tried again',
      });
      for (const id of others) t.match(await document(id), { status: 'ready', error: null });
      const found = async (query: string) => ((await app.inject({
        method: 'POST', url: '/v1/collections/abandoned/query', headers, payload: { query, search_mode: 'keyword', skip_cache: true },
      })).json().results as Array<{ document_id: string }>).map((result) => result.document_id);
      t.same(await found('beekeepers hive'), [others[0]]);
      t.same(await found('lighthouse lamp wicks'), [], 'nothing of the failed document');
    });
  });
}
