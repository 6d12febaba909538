import pino from 'pino';
import t, { type Test } from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { stopGracefully } from '../../src/graceful-stop.js';
import { logLines } from '../support/log-lines.js';
import { buildTestApp } from '../support/test-app.js';

/** An app on a database of the test's own, with every log line collected. */
async function stoppableApp(t: Test) {
  const { lines, stream: logStream } = logLines();
  const database = await openDatabase({});
  const testApp = await buildTestApp('pglite', {}, { database, logStream });
  t.teardown(async () => {
    await testApp.close().catch(() => undefined);
    await database.close().catch(() => undefined);
  });
  return { ...testApp, database, lines, logger: pino({ level: 'trace' }, logStream) };
}

t.test('a stop where a service step fails still closes the database, logs the failure once and exits 1', async (t) => {
  const { app, services, database, lines, logger } = await stoppableApp(t);
  services.queryRuntime.events.stop = () => Promise.reject(new Error('query events could not be written'));
  const exitCode = await stopGracefully({ http: app, services, database }, logger);
  t.equal(exitCode, 1);
  await t.rejects(services.sql('select 1'), 'the database was closed after the failed step');
  t.same(lines.filter((line) => line.level >= 50).map((line) => line.msg), ['a shutdown step failed'], 'one error line, from the step that failed');
  t.ok(lines.some((line) => line.msg === 'stopped after a failed shutdown step'));
});

t.test('several failed service steps are logged as one error naming each, and every later step still runs', async (t) => {
  const { app, services, database, lines, logger } = await stoppableApp(t);
  services.queryRuntime.events.stop = () => Promise.reject(new Error('query events could not be written'));
  services.embeddingUsage.stop = () => Promise.reject(new Error('embedding usage could not be written'));
  t.equal(await stopGracefully({ http: app, services, database }, logger), 1);
  const errors = lines.filter((line) => line.level >= 50);
  t.equal(errors.length, 1);
  t.match(errors[0]!.err?.message, /2 shutdown steps of the services failed: query events could not be written; embedding usage could not be written/);
  await t.rejects(services.indexes.vectorStore.count('00000000-0000-4000-8000-000000000002'), /closed/, 'the indexes were closed after the failures');
  await t.rejects(services.sql('select 1'), 'the database was closed');
});

t.test('a stop where the HTTP server fails to close still stops the services and the database', async (t) => {
  const { services, database, lines, logger } = await stoppableApp(t);
  const http = { close: () => Promise.reject(new Error('server close failed')) };
  t.equal(await stopGracefully({ http, services, database }, logger), 1);
  await t.rejects(services.indexes.vectorStore.count('00000000-0000-4000-8000-000000000002'), /closed/, 'the services stopped');
  await t.rejects(services.sql('select 1'), 'the database was closed');
  t.same(lines.filter((line) => line.level >= 50).map((line) => line.msg), ['a shutdown step failed']);
});

t.test('a clean stop exits 0', async (t) => {
  const { app, services, database, lines, logger } = await stoppableApp(t);
  t.equal(await stopGracefully({ http: app, services, database }, logger), 0);
  t.same(lines.filter((line) => line.level >= 50), [], 'nothing logged as an error');
  t.ok(lines.some((line) => line.msg === 'stopped'));
});

t.test('ingestion stops taking jobs while the server drains, not after it', async (t) => {
  const { app, services, database, logger } = await stoppableApp(t);
  await services.start();
  let drained!: () => void;
  const drainedGate = new Promise<void>((resolve) => { drained = resolve; });
  let workStopped = false;
  const stopWork = services.stopWork.bind(services);
  services.stopWork = async () => {
    await stopWork();
    workStopped = true;
  };
  // The server's drain: a slow upload still arriving. The work must stop meanwhile, not after it.
  const http = {
    close: async () => {
      for (let wait = 0; wait < 100 && !workStopped; wait++) await new Promise((resolve) => setTimeout(resolve, 20));
      drained();
      return app.close();
    },
  };
  const stopping = stopGracefully({ http, services, database }, logger);
  await drainedGate;
  t.ok(workStopped, 'ingestion stopped taking jobs while the server drained (it waited for the drain before)');
  t.equal(await stopping, 0);
});
