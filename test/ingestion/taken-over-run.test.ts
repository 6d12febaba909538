/**
 * A run that stalls past its lease (JOB_LEASE_S) loses its job to another replica, which sets the
 * document processing again and ingests it anew. When the stalled run wakes and finishes, the
 * document is the new run's: the stalled run must not mark it ready (before, it did, while the new
 * run had it processing). The stall is held at the run's last write before the document is marked
 * ready; the other replica's take-over is its statement on the job, made meanwhile.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends } from '../support/test-app.js';

const OTHER_REPLICA = 'other-host:777:0badc0de';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    const collection = await createTestCollection(app, admin, { name: 'stalled' });

    const { collections, jobs } = services;
    const recordWrite = collections.recordWrite;
    let wake!: () => void;
    const stalled = new Promise<void>((entered) => {
      collections.recordWrite = async (sql, id) => {
        if (id !== collection.id) return recordWrite.call(collections, sql, id);
        collections.recordWrite = recordWrite;
        entered();
        await new Promise<void>((resolve) => { wake = resolve; });
        return recordWrite.call(collections, sql, id);
      };
    });
    const complete = jobs.complete;
    const finished = new Promise<string[]>((resolve) => {
      jobs.complete = async (jobIds) => {
        jobs.complete = complete;
        await complete.call(jobs, jobIds);
        resolve(jobIds);
      };
    });
    t.teardown(() => {
      Object.assign(collections, { recordWrite });
      Object.assign(jobs, { complete });
    });

    const body = multipartUpload([{ filename: 'tides.txt', content: 'High water at dawn and at dusk in the inner harbour.', contentType: 'text/plain' }]);
    const upload = await app.inject({ method: 'POST', url: '/v1/collections/stalled/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
    t.equal(upload.statusCode, 202, upload.body);
    const documentId = upload.json<{ id: string }>().id;
    await stalled;

    await services.sql(`update jobs set locked_by = ?, locked_at = now() where document_id = ?`, [OTHER_REPLICA, documentId]);
    wake();
    t.equal((await finished).length, 1, 'the stalled run finished its job');

    const document = (await app.inject({ url: `/v1/collections/stalled/documents/${documentId}`, headers: admin })).json<{ status: string }>();
    t.equal(document.status, 'processing', 'the document is still the other replica\'s run\'s, not marked ready by the stalled one');
    const [job] = await services.sql<{ status: string; locked_by: string }>('select status, locked_by from jobs where document_id = ?', [documentId]);
    t.same(job, { status: 'running', locked_by: OTHER_REPLICA }, 'the job stays the other replica\'s');
  });
}
