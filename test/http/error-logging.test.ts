/**
 * A failed statement is logged without its values: no statement text, no parameters (a password's
 * argon2 hash was among them), no PostgreSQL `detail` (it echoes key values); the type, SQLSTATE,
 * constraint and table are kept. The app is built as src/main.ts builds it, on createLogger:
 * buildTestApp makes a pino of its own.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConnectionException } from '@mikro-orm/core';
import pino from 'pino';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { runEveryStep, throwFailures } from '../../src/graceful-stop.js';
import { createLogger, serializeError } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { logLines } from '../support/log-lines.js';
import { createScratchDatabase, multipartUpload, sessionCookieOf, testBackends, ADMIN, type Backend } from '../support/test-app.js';

/** Values that must not reach the log; " - " and ";" as knex and MikroORM's own separators would. */
const DISPLAY_NAME = 'Sekrit - 7f3a; display name';
const PASSWORD = 'pw - Secret 9b1c';
const EMAIL = 'hidden-7f3a@example.com';
const CONSTRAINT = 'users_display_name_test_unique';
const POSTGRES_MESSAGE = `duplicate key value violates unique constraint "${CONSTRAINT}"`;

/** The app as src/main.ts builds it, its log going to `stream`. */
async function appLoggingTo(t: Test, backend: Backend, stream: pino.DestinationStream, level = 'info') {
  const scratch = backend === 'postgresql' ? await createScratchDatabase(process.env.TEST_DATABASE_URL!, { migrated: true }) : undefined;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-test-'));
  const config: Config = {
    ...loadConfig({}), dataDir, databaseUrl: scratch?.url,
    vectorStore: backend === 'postgresql' ? 'pgvector' : 'embedded', keywordIndex: backend === 'postgresql' ? 'sql' : 'memory',
  };
  const db = await openDatabase({ databaseUrl: scratch?.url });
  const logger = createLogger(level, stream);
  const services = await createServices(config, db, logger);
  const app = await buildApp({ services, logger });
  t.teardown(async () => throwFailures(await runEveryStep([
    () => app.close(), () => services.stop(), () => db.close(),
    async () => { await scratch?.drop(); }, () => rm(dataDir, { recursive: true, force: true }),
  ]), 'steps of closing the app'));
  return { app, services };
}

function assertNoValues(t: Test, logged: string, what: string) {
  for (const value of [DISPLAY_NAME, 'Sekrit', PASSWORD, '$argon2', EMAIL, 'insert into', 'already exists']) {
    t.notOk(logged.includes(value), `${what}: ${JSON.stringify(value)} is not in the log`);
  }
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { lines, stream } = logLines();
    const { app, services } = await appLoggingTo(t, backend, stream);
    const setup = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: ADMIN });
    const cookie = sessionCookieOf(setup);
    // A second unique index on users, for a violation that is not the email's: it stays a 500.
    await services.sql(`create unique index ${CONSTRAINT} on users (display_name)`);

    await t.test('a 500 from a unique violation logs its constraint, not the statement or its values', async (t) => {
      const create = (email: string) => app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie }, payload: { email, password: PASSWORD, display_name: DISPLAY_NAME } });
      t.equal((await create('first-7f3a@example.com')).statusCode, 201);
      const refused = await create(EMAIL);
      t.equal(refused.statusCode, 500, 'another index than the email one is not told as "email taken"');
      t.same(refused.json(), { detail: 'Internal server error', code: 'internal_error', request_id: refused.json().request_id }, 'the answer names no constraint, statement or value');
      const failed = lines.find((line) => line.msg === 'request failed') as { err?: Record<string, unknown>; reqId?: string } | undefined;
      t.ok(failed?.reqId, 'the log line has the request id');
      t.equal(refused.json().request_id, failed?.reqId, 'and the answer carries it, to find the line by');
      t.match(failed?.err, { type: 'UniqueConstraintViolationException', code: '23505', table: 'users', constraint: CONSTRAINT });
      t.equal(failed?.err?.message, POSTGRES_MESSAGE, "PostgreSQL's own message");
      t.match(failed?.err?.stack, /^UniqueConstraintViolationException: duplicate key value violates unique constraint "users_display_name_test_unique"\n\s+at /);
      t.notOk('detail' in (failed?.err ?? {}) || 'query' in (failed?.err ?? {}) || 'params' in (failed?.err ?? {}), 'no detail, query or params');
      assertNoValues(t, JSON.stringify(lines), 'the request log');
    });

    await t.test("PostgreSQL's own error, from the SQL runner (not converted by MikroORM): the same", async (t) => {
      const error = await services.sql(
        `insert into users (id, email, password_hash, display_name, role, created_at, updated_at) values (gen_random_uuid(), ?, ?, ?, 'viewer', now(), now())`,
        [EMAIL, '$argon2id$v=19$m=65536,t=3,p=4$hash', DISPLAY_NAME],
      ).then(() => undefined, (failure: unknown) => failure);
      // knex sends these values bound, so they are not in the message, but `detail` (and PGlite's `params`) has them.
      t.ok(JSON.stringify(pino.stdSerializers.err(error as Error)).includes(DISPLAY_NAME), "pino's standard serializer would log the values");
      const serialized = serializeError(error) as Record<string, unknown>;
      t.match(serialized, { type: 'DatabaseError', code: '23505', table: 'users', constraint: CONSTRAINT });
      t.equal(serialized.message, POSTGRES_MESSAGE, "PostgreSQL's own message");
      assertNoValues(t, JSON.stringify(serialized), 'the serialized error');
    });
  });
}

t.test('credentials in request headers are not logged, even at trace', async (t) => {
  const { lines, stream } = logLines();
  const { app } = await appLoggingTo(t, 'pglite', stream, 'trace');
  const cookie = sessionCookieOf(await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: ADMIN }));
  const key = (await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name: 'logged' } })).json().key as string;
  await app.inject({ method: 'POST', url: '/v1/collections', headers: { authorization: `Bearer ${key}` }, payload: { name: 'traced' } });
  for (const [index, headers] of [{ authorization: `Bearer ${key}` }, { cookie }].entries()) {
    const body = multipartUpload([{ filename: 'note.txt', content: `Traced note ${index}.`, contentType: 'text/plain' }]);
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections/traced/documents', headers: { ...headers, ...body.headers }, payload: body.payload })).statusCode, 202);
  }
  // @fastify/multipart logs every request's headers at trace ("Providing options to busboy").
  const busboy = lines.find((line) => line.msg === 'Providing options to busboy') as { busboyOptions?: { headers?: Record<string, unknown> } } | undefined;
  t.match(busboy?.busboyOptions?.headers, { authorization: '[redacted]' }, 'the header is there, its value is not');
  const logged = JSON.stringify(lines);
  t.notOk(logged.includes(key.slice(7)), 'the API key is in no log line');
  t.notOk(logged.includes(cookie.split('=')[1]!.split(';')[0]!), 'nor the session cookie');
});

t.test('an error of the driver without a statement keeps its message', async (t) => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  const serialized = serializeError(new ConnectionException(refused)) as Record<string, unknown>;
  t.match(serialized, { type: 'ConnectionException', code: 'ECONNREFUSED' });
  t.equal(serialized.message, 'connect ECONNREFUSED 127.0.0.1:1');
});

t.test("other errors are serialized as pino's standard serializer does", async (t) => {
  const error = Object.assign(new TypeError('not a database error'), { code: 'E_OTHER', extra: { key: 'value' } });
  t.same(serializeError(error), pino.stdSerializers.err(error));
  t.equal(serializeError('a string'), 'a string');
});
