/**
 * A request PostgreSQL ends to resolve a deadlock (SQLSTATE 40P01), once the runner's retries of a
 * single statement are spent, is a 503 with Retry-After that the client can send again, not a 500.
 * The error is raised by the database itself (`raise ... using errcode`), so it reaches the handler
 * in the driver's own shape, through the same runner as a real deadlock.
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'deadlocked' });
    const base = '/v1/collections/deadlocked/uploads';
    const session = (await app.inject({ method: 'POST', url: base, headers: admin })).json<{ id: string }>();
    const body = multipartUpload([{ filename: 'moles.txt', content: 'Moles dig long tunnels under the meadow.', contentType: 'text/plain' }]);
    t.equal((await app.inject({ method: 'PUT', url: `${base}/${session.id}/files`, headers: { ...admin, ...body.headers }, payload: body.payload })).statusCode, 200);

    const sql = services.sql;
    t.teardown(() => Object.assign(services, { sql }));
    let deadlocked = 0;
    // Every attempt of the completion's read of its files is ended as a deadlock would end it.
    Object.assign(services, {
      sql: Object.assign(async (query: string, params?: unknown[]) => {
        if (!query.includes('from upload_session_files where session_id')) return sql(query, params);
        deadlocked += 1;
        return sql("do $$ begin raise exception using errcode = '40P01', message = 'deadlock detected'; end $$");
      }, sql),
    });
    const ended = await app.inject({ method: 'POST', url: `${base}/${session.id}/complete`, headers: admin });
    Object.assign(services, { sql });
    assertError(t, ended, 503, /^The database ended this request to resolve a deadlock with a concurrent request; send it again$/);
    t.equal(ended.json().code, 'database_deadlock');
    t.equal(ended.headers['retry-after'], '1');
    t.ok(deadlocked >= 1, `the statement was ended ${deadlocked} time(s)`);

    const view = (await app.inject({ url: `${base}/${session.id}`, headers: admin })).json();
    t.match(view, { status: 'open', file_count: 1 }, 'nothing was lost: the session is open with its file');
    const again = await app.inject({ method: 'POST', url: `${base}/${session.id}/complete`, headers: admin });
    t.equal(again.statusCode, 202, again.body);
  });
}
