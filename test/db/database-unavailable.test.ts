/**
 * PostgreSQL ending the service's connections or going away while the service runs. Connections
 * the server ended are replaced, and the pool's warning about them is a JSON line of the log
 * (knex wrote it as plain text with console.log). While the database cannot be reached, requests
 * are answered 503 with Retry-After (a client or load balancer may retry; nothing was wrong with
 * the request) instead of 500, nothing is half-written, and everything works again once it is
 * back. The service reaches the database through a TCP proxy the test can cut, as a server that
 * went down refuses connections.
 */
import t, { type Test } from 'tap';
import pg from 'pg';
import { MikroORM } from '@mikro-orm/postgresql';
import { isDatabaseUnavailable } from '../../src/db/connection-failures.js';
import { DatabaseUnavailableError, openDatabase } from '../../src/db/database.js';
import { entities } from '../../src/db/entities/index.js';
import { assertError } from '../support/assertions.js';
import { freePort } from '../support/free-port.js';
import { logLines } from '../support/log-lines.js';
import { buildTestApp, createTestCollection, multipartUpload, scratchDatabaseBehindProxy, setupAdmin } from '../support/test-app.js';

t.test('opening a PostgreSQL nothing answers for fails with where DATABASE_URL points and why, never its password', async (t) => {
  const port = await freePort();
  const failure = await openDatabase({ databaseUrl: `postgresql://app:hunter2@127.0.0.1:${port}/retrieval%20db` }).catch((error: unknown) => error);
  t.type(failure, DatabaseUnavailableError);
  t.match((failure as Error).message, new RegExp(`^could not open PostgreSQL at 127\\.0\\.0\\.1:${port}, database retrieval db \\(DATABASE_URL\\): connect ECONNREFUSED`));
  t.notMatch((failure as Error).message, 'hunter2');
  t.equal((failure as Error).stack, `DatabaseUnavailableError: ${(failure as Error).message}`, 'the message is the whole story: no stack to print');
});

if (!process.env.TEST_DATABASE_URL) {
  t.pass('a database that goes away needs PostgreSQL (TEST_DATABASE_URL)');
} else {
  /** The service on a scratch database it reaches through a TCP proxy, with a collection `harbour` and its log lines. */
  const serviceBehindProxy = async (t: Test) => {
    const { url, direct, proxy } = await scratchDatabaseBehindProxy(t);
    const { lines, stream: logStream } = logLines();
    const ctx = await buildTestApp('postgresql', {}, { replicaOf: url, logStream });
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const admin = { cookie: await setupAdmin(app) };
    await createTestCollection(app, admin, { name: 'harbour', dimension: 4 });
    const upsert = (id: string) => app.inject({
      method: 'POST', url: '/v1/collections/harbour/vectors/upsert', headers: admin,
      payload: { vectors: [{ id, embedding: [1, 2, 3, 4], text: `lighthouse ${id}` }] },
    });
    const query = () => app.inject({ method: 'POST', url: '/v1/collections/harbour/query', headers: admin, payload: { query: 'lighthouse', search_mode: 'keyword', skip_cache: true } });
    return { app, admin, lines, proxy, direct, upsert, query };
  };

  t.test('postgresql: connections ended by the server', async (t) => {
    const { lines, direct, upsert, query } = await serviceBehindProxy(t);
    t.equal((await upsert('before')).statusCode, 200);

    const printed: unknown[][] = [];
    const consoleLog = console.log;
    console.log = (...args: unknown[]) => { printed.push(args); };
    t.teardown(() => { console.log = consoleLog; });

    const administrator = new pg.Client({ connectionString: direct });
    await administrator.connect();
    t.teardown(() => administrator.end());
    const [ended] = (await administrator.query<{ count: string }>(
      'select count(pg_terminate_backend(pid)) as count from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
    )).rows;
    t.ok(Number(ended!.count) >= 1, 'the service had connections, and the server ended them');
    await new Promise((resolve) => setTimeout(resolve, 200));

    t.equal((await upsert('after')).statusCode, 200, 'a write afterwards succeeds');
    const found = await query();
    t.equal(found.statusCode, 200, 'so does a query');
    t.same(found.json().results.map((result: { id: string }) => result.id).sort(), ['after', 'before']);

    console.log = consoleLog;
    t.same(printed, [], 'nothing written to stdout beside the log');
    const poolWarnings = lines.filter((line) => (line as { component?: string }).component === 'database pool');
    t.ok(poolWarnings.length >= 1, 'the pool reported the lost connections in the log');
    t.ok(poolWarnings.every((line) => line.level === 40 && /Connection Error/.test(line.msg ?? '')), 'as warnings naming them');
  });

  t.test('postgresql: the database goes away and comes back', async (t) => {
    const { app, admin, lines, proxy, upsert, query } = await serviceBehindProxy(t);
    t.equal((await upsert('before')).statusCode, 200);

    await proxy.cut();
    const upload = multipartUpload([{ filename: 'tides.txt', content: 'Tide tables for the lighthouse.', contentType: 'text/plain' }]);
    const answers = {
      query: await query(),
      list: await app.inject({ url: '/v1/collections', headers: admin }),
      upsert: await upsert('during'),
      upload: await app.inject({ method: 'POST', url: '/v1/collections/harbour/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload }),
    };
    for (const [name, response] of Object.entries(answers)) {
      assertError(t, response, 503, /^The database is unavailable/, name);
      t.equal(response.json().code, 'database_unavailable', `${name}: a code clients can act on`);
      t.equal(response.headers['retry-after'], '5', `${name}: and when to try again`);
    }
    t.equal((await app.inject({ url: '/health/ready' })).statusCode, 503, 'readiness says so too');
    t.equal((await app.inject({ url: '/health' })).statusCode, 200, 'liveness does not');

    await proxy.restore();
    const after = await query();
    t.equal(after.statusCode, 200, 'queries work again once the database is back');
    t.same(after.json().results.map((result: { id: string }) => result.id), ['before'], 'the upsert made while it was away wrote nothing');
    const documents = await app.inject({ url: '/v1/collections/harbour/documents', headers: admin });
    t.equal(documents.json().total, 0, 'nor did the upload');
    t.equal((await upsert('after')).statusCode, 200, 'writes work again');

    const requestFailures = lines.filter((line) => /^request failed/.test(line.msg ?? ''));
    t.ok(requestFailures.length >= 4, 'each failed request is logged');
    t.ok(requestFailures.every((line) => line.level === 40 && line.msg === 'request failed: the database is unavailable'), 'as a warning saying why, not as an internal error');
  });

  t.test('postgresql: a pool with no connection free in time counts as the database unavailable', async (t) => {
    const orm = await MikroORM.init({ entities, clientUrl: process.env.TEST_DATABASE_URL!, pool: { min: 0, max: 1 }, driverOptions: { acquireConnectionTimeout: 200 }, discovery: { warnWhenNoEntities: false } });
    t.teardown(() => orm.close());
    let release!: () => void;
    const holding = orm.em.fork().transactional(() => new Promise<void>((resolve) => { release = resolve; }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const failure = await orm.em.fork().getConnection().execute('select 1').catch((error: unknown) => error);
    release();
    await holding;
    t.match(failure, { name: 'KnexTimeoutError' }, 'knex gave up waiting for a connection');
    t.ok(isDatabaseUnavailable(failure), 'which the error handler answers with 503 and Retry-After');
    t.notOk(isDatabaseUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9000'), { code: 'ECONNREFUSED' })), 'a refused connection that is not the database\'s (a bucket) does not');
  });
}
