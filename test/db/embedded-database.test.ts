import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import { adminTestApp, testBackends } from '../support/test-app.js';

t.test('statements on the embedded database keep PostgreSQL error fields and their order', async (t) => {
  const database = await openDatabase({});
  t.teardown(() => database.close());
  const sql = createSqlRunner(database);
  const failure = await sql('select 1 / 0').then(() => null, (error: unknown) => error as { code?: string; message: string });
  t.equal(failure?.code, '22012', 'the SQLSTATE reaches the caller (division_by_zero)');
  t.match(failure?.message, /division by zero/);
  await sql('create table ordered (n int)');
  await Promise.all(Array.from({ length: 20 }, (_, n) => sql('insert into ordered values (?)', [n])));
  const rows = await sql<{ n: number }>('select n from ordered');
  t.same(rows.map((row) => row.n), Array.from({ length: 20 }, (_, n) => n), 'statements run in the order they were sent');
});

t.test('a data directory that cannot be opened fails the start with the reason, and closing twice is harmless', async (t) => {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-pglite-thread-'));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  const notADirectory = path.join(directory, 'file');
  await writeFile(notADirectory, 'not a database');
  await t.rejects(openDatabase({ dataDir: notADirectory }));

  const database = await openDatabase({ dataDir: path.join(directory, 'db') });
  await database.close();
  await database.close();
  await t.rejects(createSqlRunner(database)('select 1'), 'statements after close fail instead of hanging');
});

for (const backend of testBackends()) {
  t.test(`${backend}: stored vectors stay inline and uncompressed up to 8,160 bytes (no toasting of 384-dim rows)`, async (t) => {
    const { services } = await adminTestApp(t, backend);
    const sql = services.queryRuntime.sql;
    const rows = await sql<{ relname: string; reloptions: string[] | null }>(
      "select relname, reloptions from pg_class where relname in ('embedded_vectors', 'embedding_cache') order by relname",
    );
    t.same(rows.map((row) => [row.relname, row.reloptions]), [
      ['embedded_vectors', ['toast_tuple_target=8160']],
      ['embedding_cache', ['toast_tuple_target=8160']],
    ]);
  });
}

for (const backend of testBackends()) {
  t.test(`${backend}: a long chain of statements lets requests in every 50 ms`, async (t) => {
    const { app, services } = await adminTestApp(t, backend);
    // 60 statements of 10 ms: 0.6 s. On PGlite each one runs synchronously and resolves with a
    // microtask, so without a turn of the event loop between them no request is taken in meanwhile.
    const statuses = new Set<number>();
    let answeredDuringChain = 0;
    let chainRunning = true;
    const chain = (async () => {
      for (let index = 0; index < 60; index++) await services.sql('select pg_sleep(0.01)');
      chainRunning = false;
    })();
    // A request a timer sends, as a client's arrives: it can only run when the event loop turns.
    const health = (async () => {
      while (chainRunning) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (!chainRunning) break;
        statuses.add((await app.inject({ url: '/health' })).statusCode);
        answeredDuringChain++;
      }
    })();
    await Promise.all([chain, health]);
    t.same([...statuses], [200]);
    t.ok(answeredDuringChain >= 5, `/health answered ${answeredDuringChain} times while the chain ran`);
  });
}
