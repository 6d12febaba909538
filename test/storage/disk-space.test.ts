/**
 * A disk that is nearly full (MIN_FREE_DISK_MB). Run into a full disk, the embedded database spun
 * at 100 % CPU and answered nothing, health checks included, until it was killed; uploads before
 * that were 500s. Now writes of what clients send are refused with a 507 that says why, nothing of
 * them kept; queries and deletes go on; ingestion waits. A minimum larger than any disk stands in
 * for a full one here, read from the real disk.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { logLines } from '../support/log-lines.js';
import {
  buildTestApp, createTestCollection, multipartUpload, restartableTestApp, setupAdmin, testBackends, waitForIngestion,
} from '../support/test-app.js';

/** More than any disk holds: the disk always counts as nearly full. */
const BEYOND_ANY_DISK = 2 ** 50;
/** The embedded database's own free space is counted (and named) too; PostgreSQL's is not on DATA_DIR's disk. */
const REFUSED = /^The disk holding DATA_DIR \(.+\) has \d+ MB free( \(and [\d.]+ MB inside the embedded database\))?( and this request brings [\d.]+ MB)?, less than MIN_FREE_DISK_MB \(\d+\) would be left: uploads and vector upserts are refused until space is freed \(deleting documents frees their files( at once and their rows at the embedded database's next vacuum)?\); nothing of this request was kept$/;

/** Every entry under `directory`, none when it does not exist. */
async function entriesUnder(directory: string): Promise<string[]> {
  return readdir(directory, { recursive: true }).catch(() => []);
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    await t.test('a nearly full disk: uploads and vector upserts are a 507 that says why, nothing of them is kept, and queries go on', async (t) => {
      const ctx = await buildTestApp(backend, { minFreeDiskBytes: BEYOND_ANY_DISK });
      t.teardown(() => ctx.close());
      const { app } = ctx;
      const admin = { cookie: await setupAdmin(app) };
      await createTestCollection(app, admin, { name: 'full' });
      await createTestCollection(app, admin, { name: 'raw', dimension: 3 });

      const ready = await app.inject({ url: '/health/ready' });
      t.equal(ready.statusCode, 200, 'still ready: queries and deletes go on');
      t.match(ready.json().disk, { min_free_bytes: BEYOND_ANY_DISK, writes_refused: true });
      t.type(ready.json().disk.free_bytes, 'number');

      // Past ORIGINALS_IN_DATABASE_MAX_BYTES: accepted, it would be written as a file.
      const single = multipartUpload([{ filename: 'tides.txt', content: 'The harbour keeps the tide tables. '.repeat(3000), contentType: 'text/plain' }]);
      const refused = await app.inject({ method: 'POST', url: '/v1/collections/full/documents', headers: { ...admin, ...single.headers }, payload: single.payload });
      assertError(t, refused, 507, REFUSED, 'single upload');
      t.equal(refused.json().code, 'insufficient_storage');
      t.match(refused.json().detail, / and this request brings [\d.]+ MB,/, 'counts what the request brings');

      const batch = multipartUpload([{ filename: 'a.txt', content: 'first note', contentType: 'text/plain' }, { filename: 'b.txt', content: 'second note', contentType: 'text/plain' }]);
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/full/documents/batch', headers: { ...admin, ...batch.headers }, payload: batch.payload }), 507, REFUSED, 'batch upload');

      const session = await app.inject({ method: 'POST', url: '/v1/collections/full/uploads', headers: admin, payload: {} });
      t.equal(session.statusCode, 201, session.body);
      const sessionFiles = multipartUpload([{ filename: 'c.txt', content: 'third note', contentType: 'text/plain' }]);
      assertError(t, await app.inject({ method: 'PUT', url: `/v1/collections/full/uploads/${session.json().id}/files`, headers: { ...admin, ...sessionFiles.headers }, payload: sessionFiles.payload }), 507, REFUSED, 'upload session files');

      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/raw/vectors/upsert', headers: admin, payload: { vectors: [{ id: 'v1', embedding: [1, 0, 0], text: 'kept nowhere' }] } }), 507, REFUSED, 'vector upsert');

      t.equal((await app.inject({ url: '/v1/collections/full/documents', headers: admin })).json().total, 0, 'no document was created');
      t.equal((await app.inject({ url: '/v1/collections/raw/stats', headers: admin })).json().chunks, 0, 'no vector was stored');
      t.same(await entriesUnder(path.join(ctx.services.config.dataDir, 'files')), [], 'no file was written');
      const query = await app.inject({ method: 'POST', url: '/v1/collections/full/query', headers: admin, payload: { query: 'tide tables' } });
      t.equal(query.statusCode, 200, query.body);
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/full/documents', headers: single.headers, payload: single.payload }), 401, undefined, 'a caller without credentials learns nothing of the disk');
    });

    await t.test('the database\'s disk full under an upload (past the check, or with it off): a 507, and the stored file is taken back', async (t) => {
      const ctx = await buildTestApp(backend);
      t.teardown(() => ctx.close());
      const { app, services } = ctx;
      const admin = { cookie: await setupAdmin(app) };
      await createTestCollection(app, admin, { name: 'db-full' });
      // What PostgreSQL (and PGlite) answer when a table cannot grow: SQLSTATE 53100, disk_full.
      await services.sql(`create function refuse_for_full_disk() returns trigger language plpgsql as $$
        begin raise exception 'could not extend file "base/5/16384": No space left on device' using errcode = 'disk_full'; end $$`);
      await services.sql('create trigger full_disk before insert on documents for each row execute function refuse_for_full_disk()');
      const large = multipartUpload([{ filename: 'large.txt', content: 'tide tables '.repeat(10_000), contentType: 'text/plain' }]);
      const refused = await app.inject({ method: 'POST', url: '/v1/collections/db-full/documents', headers: { ...admin, ...large.headers }, payload: large.payload });
      assertError(t, refused, 507, 'The disk the service writes to is full (no space left on device): free space and try again');
      t.equal(refused.json().code, 'insufficient_storage');
      t.same(await entriesUnder(path.join(services.config.dataDir, 'files')).then((entries) => entries.filter((entry) => entry.includes('/'))), [], 'the file written before the database refused is gone');
      await services.sql('drop trigger full_disk on documents');
      const accepted = await app.inject({ method: 'POST', url: '/v1/collections/db-full/documents', headers: { ...admin, ...large.headers }, payload: large.payload });
      t.equal(accepted.statusCode, 202, `taken once there is room: ${accepted.body.slice(0, 200)}`);
      t.equal((await entriesUnder(path.join(services.config.dataDir, 'files'))).filter((entry) => entry.includes('/')).length, 1, 'such an upload is stored as a file');
    });

    if (backend === 'pglite') {
      await t.test('deleting documents makes room again: the space of their rows inside the embedded database counts once vacuumed', async (t) => {
        const MB = 1024 * 1024;
        const minFree = 1024 * MB;
        // The disk: roomy, then exactly at the minimum; only the database's own free space can make room.
        let diskFree = 10 * minFree;
        const ctx = await buildTestApp(backend, { minFreeDiskBytes: minFree, embeddedVacuumIntervalMs: 300, embeddedCheckpointWalBytes: 0 }, { readDiskFreeBytes: async () => diskFree });
        t.teardown(() => ctx.close());
        const { app } = ctx;
        const admin = { cookie: await setupAdmin(app) };
        await createTestCollection(app, admin, { name: 'reuse' });
        const upload = async (filename: string, content: string) => {
          const form = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
          return app.inject({ method: 'POST', url: '/v1/collections/reuse/documents', headers: { ...admin, ...form.headers }, payload: form.payload });
        };
        const report = Array.from({ length: 12_000 }, (_, index) => `Survey ${index} of the harbour counted ${index * 7} moorings and ${index % 13} wrecks near buoy ${index * 31}.`).join('\n\n');
        const large = await upload('survey.txt', report);
        t.equal(large.statusCode, 202, large.body);
        await waitForIngestion(app, 'reuse', admin);
        // Written after the survey, so that its rows are not at the tables' ends, which a vacuum gives back to the disk.
        t.equal((await upload('later.txt', 'The harbour keeps the tide tables for the bay.')).statusCode, 202);
        await waitForIngestion(app, 'reuse', admin);

        diskFree = minFree;
        const databaseFree = async () => (await app.inject({ url: '/health/ready' })).json().disk.database_free_bytes as number;
        // Two vacuum rounds and a fresh reading: what the ingestion's own updates left is counted before the probe is sized.
        await new Promise((resolve) => setTimeout(resolve, 5500));
        const before = await databaseFree();
        t.type(before, 'number', '/health/ready gives the space inside the database while the disk alone is short');
        const probe = 'Tide gauge reading. '.repeat(Math.ceil((before + 2 * MB) / 20));
        const refused = await upload('probe.txt', probe);
        assertError(t, refused, 507, /^The disk holding DATA_DIR \(.+\) has 1024 MB free \(and [\d.]+ MB inside the embedded database\) and this request brings [\d.]+ MB, less than MIN_FREE_DISK_MB \(1024\) would be left: uploads and vector upserts are refused until space is freed \(deleting documents frees their files at once and their rows at the embedded database's next vacuum\); nothing of this request was kept$/, 'an upload larger than the space inside the database');
        t.equal((await app.inject({ url: '/health/ready' })).json().disk.writes_refused, false, 'an upload that fits is still taken');

        const documents = (await app.inject({ url: '/v1/collections/reuse/documents?q=survey', headers: admin })).json().data;
        t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/reuse/documents/${documents[0].id}`, headers: admin })).statusCode, 204);
        let after = before;
        for (const deadline = Date.now() + 15_000; after < before + probe.length + MB && Date.now() < deadline;) {
          await new Promise((resolve) => setTimeout(resolve, 500));
          after = await databaseFree();
        }
        t.ok(after >= before + probe.length + MB, `the survey's rows are free inside the database once vacuumed (${(before / MB).toFixed(1)} MB before, ${(after / MB).toFixed(1)} MB after)`);
        const taken = await upload('probe.txt', probe);
        t.equal(taken.statusCode, 202, `the same upload is taken: ${taken.body.slice(0, 300)}`);
        // Ingestion reserves 16 bytes a byte of original: the probe may wait, a small document fits.
        const small = await upload('small.txt', 'The ferry leaves at dawn.');
        t.equal(small.statusCode, 202, small.body);
        const status = async () => (await app.inject({ url: `/v1/collections/reuse/documents/${small.json().id}`, headers: admin })).json().status;
        for (const deadline = Date.now() + 15_000; await status() !== 'ready' && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 100));
        t.equal(await status(), 'ready', 'ingestion counts that space too');
      });
    }

    if (backend === 'pglite') {
      await t.test('near the margin, as each document takes the room another freed, the log says once that ingestion waits', async (t) => {
        const MB = 1024 * 1024;
        // Room for `allowance` documents more than are ingested: each needs 1.6 MB (16 × 100 KB), two do not fit in 2 MB.
        let allowance = 1000;
        const { lines, stream } = logLines();
        const ctx = await buildTestApp(backend, { minFreeDiskBytes: MB, embeddedVacuumIntervalMs: 0 }, {
          startWorkers: false,
          logStream: stream,
          readDiskFreeBytes: async () => {
            const [row] = await ctx.services.sql<{ ready: string | number }>("select count(*) as ready from documents where status = 'ready'");
            return MB + (allowance - Number(row!.ready)) * 2 * MB;
          },
        });
        t.teardown(() => ctx.close());
        const { app } = ctx;
        const admin = { cookie: await setupAdmin(app) };
        await createTestCollection(app, admin, { name: 'margin' });
        for (let index = 0; index < 4; index++) {
          const upload = multipartUpload([{ filename: `log-${index}.txt`, content: `Log ${index}. ${'The tide turned at the harbour mouth. '.repeat(2800)}`, contentType: 'text/plain' }]);
          const created = await app.inject({ method: 'POST', url: '/v1/collections/margin/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
          t.equal(created.statusCode, 202, created.body);
        }
        allowance = 1;
        await ctx.services.start();
        // Room for one more document every 1.5 s.
        const grants = setInterval(() => { allowance += 1; }, 1500);
        t.teardown(() => clearInterval(grants));
        const documents = await waitForIngestion(app, 'margin', admin, 30_000);
        t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready', 'ready']);
        const said = lines.map((line) => line.msg ?? '');
        t.equal(said.filter((message) => /ingestion waits until space is freed$/.test(message)).length, 1, 'waiting said once (it was once a document)');
        t.equal(said.filter((message) => message === 'there is disk space again: ingestion goes on').length, 1, 'going on said once');
      });
    }

    // On PostgreSQL (with pgvector) ingestion writes nothing to DATA_DIR, so its disk does not hold it back.
    const ingestionFillsDataDir = backend === 'pglite';
    await t.test(ingestionFillsDataDir ? 'ingestion waits while the disk is nearly full, saying so once, and goes on when there is room' : 'ingestion, which writes to PostgreSQL, goes on while DATA_DIR\'s disk is nearly full', async (t) => {
      const apps = await restartableTestApp(t, backend, 'rs-disk-');
      // No workers: the document is queued, not ingested.
      const first = await apps.restart({ workerConcurrency: 0 });
      const admin = { cookie: await setupAdmin(first.app) };
      await createTestCollection(first.app, admin, { name: 'later' });
      const upload = multipartUpload([{ filename: 'tides.txt', content: 'The harbour keeps the tide tables for the bay.', contentType: 'text/plain' }]);
      const created = await first.app.inject({ method: 'POST', url: '/v1/collections/later/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
      t.equal(created.statusCode, 202, created.body);

      const { lines, stream } = logLines();
      const full = await apps.restart({ minFreeDiskBytes: BEYOND_ANY_DISK }, stream);
      if (!ingestionFillsDataDir) {
        t.equal((await waitForIngestion(full.app, 'later', admin))[0].status, 'ready');
        t.notOk(lines.some((line) => /ingestion waits/.test(line.msg ?? '')), 'nothing said of waiting');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const waiting = (await full.app.inject({ url: `/v1/collections/later/documents/${created.json().id}`, headers: admin })).json();
      t.equal(waiting.status, 'pending', 'not ingested while the disk is nearly full');
      t.equal(waiting.progress.message, 'waiting for a worker (the disk holding DATA_DIR is nearly full (MIN_FREE_DISK_MB): it is ingested once space is freed)', 'and says why');
      const warnings = lines.filter((line) => /ingestion waits until space is freed/.test(line.msg ?? ''));
      t.equal(warnings.length, 1, 'said once, not once a second');
      t.match(warnings[0]?.msg, /^The disk holding DATA_DIR \(.+\) has \d+ MB free \(and [\d.]+ MB inside the embedded database\), less than MIN_FREE_DISK_MB \(\d+\) would be left: ingestion waits until space is freed$/);

      const roomy = await apps.restart({ minFreeDiskBytes: 1 });
      const documents = await waitForIngestion(roomy.app, 'later', admin);
      t.equal(documents[0].status, 'ready', 'ingested once there is room');
    });

    if (ingestionFillsDataDir) {
      await t.test('a document too large for the room left waits, saying why, and does not hold back smaller ones', async (t) => {
        const apps = await restartableTestApp(t, backend, 'rs-disk-room-');
        const first = await apps.restart({ workerConcurrency: 0 });
        const admin = { cookie: await setupAdmin(first.app) };
        await createTestCollection(first.app, admin, { name: 'room' });
        const ids: string[] = [];
        for (const [filename, content] of [['huge.txt', 'Stands in for a file far larger than the disk.'], ['small.txt', 'The harbour keeps the tide tables.']]) {
          const upload = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
          ids.push((await first.app.inject({ method: 'POST', url: '/v1/collections/room/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload })).json().id);
        }
        // A petabyte: what ingesting it would take cannot fit on any disk.
        await first.services.sql('update documents set size_bytes = ? where id = ?', [2 ** 50, ids[0]]);

        const { lines, stream } = logLines();
        const roomy = await apps.restart({ minFreeDiskBytes: 1 }, stream);
        const read = async (id: string) => (await roomy.app.inject({ url: `/v1/collections/room/documents/${id}`, headers: admin })).json();
        for (const deadline = Date.now() + 30_000; (await read(ids[1]!)).status !== 'ready' && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 100));
        t.equal((await read(ids[1]!)).status, 'ready', 'the small document, queued behind it, is ingested');
        const huge = await read(ids[0]!);
        t.equal(huge.status, 'pending');
        t.equal(huge.progress.message, 'waiting for a worker (the disk holding DATA_DIR is nearly full (MIN_FREE_DISK_MB): it is ingested once space is freed)');
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const warnings = lines.filter((line) => /ingestion waits until space is freed/.test(line.msg ?? ''));
        t.equal(warnings.length, 1, 'said once');
        t.match(warnings[0]?.msg, / MB free \(and [\d.]+ MB inside the embedded database\), less than MIN_FREE_DISK_MB \(0\) would be left after the next document \(\d+ MB to ingest\): ingestion waits until space is freed$/);
      });
    }
  });
}
