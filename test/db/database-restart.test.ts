/**
 * PostgreSQL ending the service's connections (a restart, a failover, an administrator): requests
 * go on over new connections, and the pool's warning about the lost ones is a JSON line of the
 * service's log. knex wrote it as plain text with console.log, in between the JSON lines.
 */
import t from 'tap';
import pg from 'pg';
import { logLines } from '../support/log-lines.js';
import { buildTestApp, createTestCollection, setupAdmin } from '../support/test-app.js';

if (!process.env.TEST_DATABASE_URL) {
  t.pass('ending server connections needs PostgreSQL (TEST_DATABASE_URL)');
} else {
  t.test('postgresql: connections ended by the server', async (t) => {
    const { lines, stream: logStream } = logLines();
    const ctx = await buildTestApp('postgresql', {}, { logStream });
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const admin = { cookie: await setupAdmin(app) };
    await createTestCollection(app, admin, { name: 'restarts', dimension: 4 });
    const upsert = (id: string) => app.inject({
      method: 'POST', url: '/v1/collections/restarts/vectors/upsert', headers: admin,
      payload: { vectors: [{ id, embedding: [1, 2, 3, 4], text: `harbour ${id}` }] },
    });
    t.equal((await upsert('before')).statusCode, 200);

    const printed: unknown[][] = [];
    const consoleLog = console.log;
    console.log = (...args: unknown[]) => { printed.push(args); };
    t.teardown(() => { console.log = consoleLog; });

    const administrator = new pg.Client({ connectionString: ctx.services.config.databaseUrl! });
    await administrator.connect();
    t.teardown(() => administrator.end());
    const [ended] = (await administrator.query<{ count: string }>(
      'select count(pg_terminate_backend(pid)) as count from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
    )).rows;
    t.ok(Number(ended!.count) >= 1, 'the service had connections, and the server ended them');
    await new Promise((resolve) => setTimeout(resolve, 200));

    t.equal((await upsert('after')).statusCode, 200, 'a write afterwards succeeds');
    const query = await app.inject({ method: 'POST', url: '/v1/collections/restarts/query', headers: admin, payload: { query: 'harbour', search_mode: 'keyword', skip_cache: true } });
    t.equal(query.statusCode, 200, 'so does a query');
    t.same(query.json().results.map((result: { id: string }) => result.id).sort(), ['after', 'before']);

    console.log = consoleLog;
    t.same(printed, [], 'nothing written to stdout beside the log');
    const poolWarnings = lines.filter((line) => (line as { component?: string }).component === 'database pool');
    t.ok(poolWarnings.length >= 1, 'the pool reported the lost connections in the log');
    t.ok(poolWarnings.every((line) => line.level === 40 && /Connection Error/.test(line.msg ?? '')), 'as warnings naming them');
  });
}
