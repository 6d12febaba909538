/**
 * Upload sessions deleted while a request uses them (a truncate deletes every session of its
 * collection), on PostgreSQL (the embedded database runs one statement at a time). A client of the
 * test's own holds the deletion open until the request's statement waits for it, so the moment is
 * certain; both were 500s, found by a probe racing truncates with sessions.
 * - Files added as the session is deleted: they went in and failed their foreign key.
 * - A completion whose session is deleted before its last write: it read back no session.
 * And a file added as the session is completed is either in the completion or refused; it was
 * answered 200 and never ingested.
 */
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { waitUntilBlockedBy, waitUntilLockWaits } from '../support/lock-waits.js';
import { startStreamedRequest } from '../support/streamed-request.js';
import { waitUntil } from '../support/wait-until.js';
import { adminTestApp, createTestCollection, multipartUpload } from '../support/test-app.js';

if (!process.env.TEST_DATABASE_URL) {
  t.plan(0, 'PostgreSQL only (TEST_DATABASE_URL unset)');
} else {
  t.test('postgresql: a session deleted under a request is a 404, not a 500', async (t) => {
    const { app, admin, services } = await adminTestApp(t, 'postgresql');
    await createTestCollection(app, admin, { name: 'sessions' });
    const other = new pg.Client({ connectionString: services.config.databaseUrl });
    await other.connect();
    t.teardown(() => other.end());
    const otherPid = (await other.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    const open = async () => (await app.inject({ method: 'POST', url: '/v1/collections/sessions/uploads', headers: admin })).json().id as string;
    const put = (id: string, name: string) => {
      const body = multipartUpload([{ filename: name, content: `${name} holds a few words about harbours`, contentType: 'text/plain' }]);
      return app.inject({ method: 'PUT', url: `/v1/collections/sessions/uploads/${id}/files`, headers: { ...admin, ...body.headers }, payload: body.payload });
    };

    await t.test('files added while the session is deleted', async (t) => {
      const id = await open();
      await other.query('begin');
      await other.query('delete from upload_sessions where id = $1', [id]);
      const answer = put(id, 'late.txt');
      await waitUntilBlockedBy(services.sql, otherPid);
      await other.query('commit');
      assertError(t, await answer, 404, /not found: it was deleted/);
      t.same(await services.sql('select id from upload_session_files where session_id = ?', [id]), [], 'no file row left');
    });

    await t.test('a completion whose session is deleted before its last write', async (t) => {
      const id = await open();
      t.equal((await put(id, 'first.txt')).statusCode, 200);
      // The completion has claimed the session when it opens its batch, which this lock holds up.
      await other.query('begin');
      await other.query('lock table document_batches in exclusive mode');
      const answer = app.inject({ method: 'POST', url: `/v1/collections/sessions/uploads/${id}/complete`, headers: admin });
      await waitUntilBlockedBy(services.sql, otherPid);
      await other.query('delete from upload_sessions where id = $1', [id]);
      await other.query('commit');
      assertError(t, await answer, 404, /deleted \(its collection truncated\) while it was being completed/);
    });

    await t.test('a file added while the session is completed is in the completion or refused', async (t) => {
      const id = await open();
      t.equal((await put(id, 'first.txt')).statusCode, 200);
      // The second file's request reaches the route (the session is marked active) and waits for its last bytes.
      await app.listen({ port: 0, host: '127.0.0.1' });
      const body = multipartUpload([{ filename: 'second.txt', content: 'second tells of tides and harbour lights', contentType: 'text/plain' }]);
      const touched = async () => (await services.sql<{ at: string }>('select updated_at::text as at from upload_sessions where id = ?', [id]))[0]!.at;
      const touchedBefore = await touched();
      const upload = await startStreamedRequest((app.server.address() as AddressInfo).port, {
        method: 'PUT', url: `/v1/collections/sessions/uploads/${id}/files`, headers: { Cookie: admin.cookie, 'Content-Type': body.headers['content-type'] },
      }, body.payload, 20);
      t.teardown(() => upload.destroy());
      await waitUntil(async () => await touched() !== touchedBefore, 'the second file\'s request reaches the route');
      // The completion has read what it reads before its claim, which this share lock holds up; the
      // file's last bytes arrive then, and its statements run until one waits for the lock too.
      await other.query('begin');
      await other.query('select id from upload_sessions where id = $1 for share', [id]);
      const completion = app.inject({ method: 'POST', url: `/v1/collections/sessions/uploads/${id}/complete`, headers: admin });
      await waitUntilBlockedBy(services.sql, otherPid);
      const uploaded = upload.finish();
      await waitUntilLockWaits(services.sql, 2);
      await other.query('commit');
      const completed = await completion;
      t.equal(completed.statusCode, 202, completed.body);
      const answer = await uploaded;
      const filenames = completed.json().documents.map((document: { filename: string }) => document.filename).sort();
      if (/^HTTP\/1\.1 200 /.test(answer)) t.same(filenames, ['first.txt', 'second.txt'], 'the file taken is in the completion');
      else {
        t.match(answer, /^HTTP\/1\.1 409 /, 'or the file is refused');
        t.same(filenames, ['first.txt']);
      }
      const [orphans] = await services.sql<{ count: number }>('select count(*)::int as count from upload_session_files where session_id = ? and document_id is null', [id]);
      t.equal(orphans!.count, 0, 'every file of the session is a document');
    });
  });
}
