/**
 * A graceful stop (SIGTERM: a rolling restart) while a long document is being ingested: the
 * workers wait a while, then hand the jobs they hold back to the queue, their documents back to
 * pending, without counting the attempt. Before, they stayed running until their lease lapsed
 * (PostgreSQL) or the next start, each stop costing an attempt, and the third failed the document
 * as if the process had crashed. The wait is shortened here; the collection ingested first is
 * held in its index write until after the stop, the other waits its turn in the same claim.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend, { workerConcurrency: 1 }, { startWorkers: false });
    await createTestCollection(app, admin, { name: 'slow' });
    await createTestCollection(app, admin, { name: 'later' });
    const upload = async (collection: string, filename: string) => {
      const body = multipartUpload([{ filename, content: `A note about ${filename} and its lighthouse.`, contentType: 'text/plain' }]);
      t.equal((await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload })).statusCode, 202);
    };
    // Queued before the workers start, so that one claim takes both collections' jobs.
    await upload('slow', 'long.txt');
    for (const name of ['a.txt', 'b.txt']) await upload('later', name);

    const { vectorStore } = services.indexes;
    const upsert = vectorStore.upsert;
    let entered!: () => void;
    const inIndexWrite = new Promise<void>((resolve) => { entered = resolve; });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    let heldCollection: string | undefined;
    vectorStore.upsert = async (items) => {
      if (!heldCollection) {
        heldCollection = items[0]!.collectionId;
        entered();
        await gate;
      }
      return upsert.call(vectorStore, items);
    };
    t.teardown(() => { vectorStore.upsert = upsert; release(); });

    await services.start();
    await inIndexWrite;
    await services.ingestion.stop(200);
    const jobs = async () => services.sql<{ status: string; attempts: number; abandoned: number; locked_by: string | null }>(
      'select status, attempts, abandoned, locked_by from jobs order by created_at',
    );
    t.same((await jobs()).map((job) => [job.status, job.attempts, job.abandoned, job.locked_by]), [
      ['queued', 0, 0, null], ['queued', 0, 0, null], ['queued', 0, 0, null],
    ], 'every job back in the queue, the attempt not counted, not taken for abandoned');
    for (const collection of ['slow', 'later']) {
      const listed = (await app.inject({ url: `/v1/collections/${collection}/documents`, headers: admin })).json().data as Array<{ status: string; progress: { stage: string; message: string } }>;
      t.ok(listed.every((document) => document.status === 'pending' && document.progress.stage === 'queued'), `${collection}: its documents pending again`);
      t.ok(listed.some((document) => /process working on it was stopped/.test(document.progress.message)), `${collection}: saying why they wait`);
    }

    vectorStore.upsert = upsert;
    release();
    // The run that was held goes on once released (a stopping process exits soon after): it may
    // write its document, but it no longer holds the job, so it must not finish or fail it.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [row] = await services.sql<{ statuses: string[] }>('select array_agg(status) as statuses from documents where collection_id = ?', [heldCollection]);
      if (row!.statuses.every((status) => status === 'ready') || Date.now() > deadline) break;
      await sleep(50);
    }
    t.same((await jobs()).map((job) => job.status), ['queued', 'queued', 'queued'], 'the released run finished its document, not its job');
    await services.start();
    // The released run may have left its document ready while its job waits in the queue: the
    // restart runs that job again, so its document is settled only once every job is done.
    const restartDeadline = Date.now() + 30_000;
    while ((await jobs()).some((job) => job.status !== 'done') && Date.now() < restartDeadline) await sleep(50);
    for (const collection of ['slow', 'later']) {
      const documents = await waitForIngestion(app, collection, admin);
      t.ok(documents.every((document) => document.status === 'ready'), `${collection}: ready after the restart`);
    }
    const done = await jobs();
    t.ok(done.every((job) => job.status === 'done' && job.abandoned === 0), 'all done, none taken for abandoned');
  });
}
