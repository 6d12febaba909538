/**
 * The upkeep PGlite gets from the service (src/db/embedded-database-upkeep.ts), since it runs no
 * background processes: a checkpoint once the write-ahead log passes EMBEDDED_CHECKPOINT_WAL_MB
 * (PGlite's own max_wal_size is 1GB and cannot be set, so it kept up to a gigabyte of log in
 * DATA_DIR), and VACUUM every EMBEDDED_VACUUM_INTERVAL_S (without autovacuum the space of deleted
 * rows was never reused: each truncate and ingestion of the same files grew the tables by as much again).
 */
import t, { type Test } from 'tap';
import { EmbeddedDatabaseUpkeep } from '../../src/db/embedded-database-upkeep.js';
import { createLogger } from '../../src/logger.js';
import type { SqlRunner } from '../../src/plugins.js';
import { logLines } from '../support/log-lines.js';
import { adminTestApp, multipartUpload, waitForIngestion } from '../support/test-app.js';

const MB = 1024 * 1024;

const files = Array.from({ length: 20 }, (_, file) => ({
  filename: `ledger-${file}.txt`,
  content: Array.from({ length: 300 }, (_, index) => `Ledger entry ${file * 1000 + index} records the cargo of the schooner and the tide at the quay. `).join(''),
  contentType: 'text/plain',
}));

async function ingestionWithCheckpointsAt(t: Test, walBytes: number) {
  const { lines, stream: logStream } = logLines();
  const { app, services, admin } = await adminTestApp(t, 'pglite', { embeddedCheckpointWalBytes: walBytes }, { logStream });
  const redo = async () => (await services.sql<{ redo_lsn: string }>('select (pg_control_checkpoint()).redo_lsn'))[0]!.redo_lsn;
  const walSinceCheckpoint = async () => Number((await services.sql<{ bytes: string }>(
    'select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (pg_control_checkpoint()).redo_lsn) as bytes',
  ))[0]!.bytes);
  const redoBefore = await redo();
  t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'logs' } })).statusCode, 201);
  const upload = multipartUpload(files);
  const answer = await app.inject({ method: 'POST', url: '/v1/collections/logs/documents/batch', headers: { ...admin, ...upload.headers }, payload: upload.payload });
  t.equal(answer.statusCode, 202, 'uploaded');
  t.same((await waitForIngestion(app, 'logs', admin)).map((document) => document.status), files.map(() => 'ready'));
  return { lines, redo, redoBefore, walSinceCheckpoint };
}

t.test('past EMBEDDED_CHECKPOINT_WAL_MB of log, the embedded database is checkpointed', async (t) => {
  const { lines, redo, redoBefore, walSinceCheckpoint } = await ingestionWithCheckpointsAt(t, MB);
  for (const deadline = Date.now() + 20_000; await walSinceCheckpoint() >= MB && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 250));
  t.ok(await walSinceCheckpoint() < MB, 'less than a megabyte of log since the last checkpoint');
  t.not(await redo(), redoBefore, 'a checkpoint was made');
  const checkpoints = lines.filter((line) => line.msg === 'checkpointed the embedded database');
  t.ok(checkpoints.length >= 1, `logged at debug level (${checkpoints.length})`);
  t.match(checkpoints[0], { level: 20, component: 'database', wal_bytes: Number, took_ms: Number });
  t.ok((checkpoints[0] as { wal_bytes?: number }).wal_bytes! >= MB, 'once the log had reached the threshold');
});

t.test('EMBEDDED_CHECKPOINT_WAL_MB=0: checkpoints are left to PGlite', async (t) => {
  const { lines, redo, redoBefore, walSinceCheckpoint } = await ingestionWithCheckpointsAt(t, 0);
  // Longer than the 5 s between checks.
  await new Promise((resolve) => setTimeout(resolve, 6000));
  t.ok(await walSinceCheckpoint() >= MB, 'the log since the last checkpoint passed a megabyte');
  t.equal(await redo(), redoBefore, 'and no checkpoint was made');
  t.notOk(lines.some((line) => line.msg === 'checkpointed the embedded database'));
});

/** Ingests the files, truncates the collection, `rounds` times; the tables' size after each ingestion. */
async function truncateAndIngestAgain(t: Test, vacuumIntervalMs: number, rounds: number) {
  const { lines, stream: logStream } = logLines();
  const { app, services, admin } = await adminTestApp(t, 'pglite', { embeddedVacuumIntervalMs: vacuumIntervalMs }, { logStream });
  const tablesBytes = async () => Number((await services.sql<{ bytes: string }>(
    "select sum(pg_total_relation_size(oid)) as bytes from pg_class where relkind = 'r' and relnamespace = 'public'::regnamespace",
  ))[0]!.bytes);
  const vacuumRounds = () => lines.filter((line) => line.msg === 'vacuumed the embedded database').length;
  t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'ledgers' } })).statusCode, 201);
  const sizes: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const upload = multipartUpload(files);
    const answer = await app.inject({ method: 'POST', url: '/v1/collections/ledgers/documents/batch', headers: { ...admin, ...upload.headers }, payload: upload.payload });
    t.equal(answer.statusCode, 202, `round ${round}: uploaded`);
    t.same((await waitForIngestion(app, 'ledgers', admin)).map((document) => document.status), files.map(() => 'ready'), `round ${round}: ingested`);
    sizes.push(await tablesBytes());
    const truncated = await app.inject({ method: 'POST', url: '/v1/collections/ledgers/truncate', headers: admin });
    t.same(truncated.json(), { deleted_documents: files.length });
    if (vacuumIntervalMs > 0) {
      // Two more vacuum rounds end after the truncate, so one ran whole on its deleted rows.
      const roundsBefore = vacuumRounds();
      for (const deadline = Date.now() + 10_000; vacuumRounds() < roundsBefore + 2 && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 50));
      t.ok(vacuumRounds() >= roundsBefore + 2, `round ${round}: vacuumed since the truncate`);
    }
  }
  return { sizes, lines };
}

t.test('deleted rows\' space is reused: truncating and ingesting the same files again does not grow the tables', async (t) => {
  const { sizes, lines } = await truncateAndIngestAgain(t, 300, 3);
  t.ok(sizes[2]! <= sizes[0]! * 1.15, `the tables after each ingestion: ${sizes.map((bytes) => `${Math.round(bytes / 1024)} KB`).join(', ')}`);
  t.match(lines.find((line) => line.msg === 'vacuumed the embedded database'), { level: 20, component: 'database', tables: Number, took_ms: Number, slowest_table: /^\S+$/, slowest_table_ms: Number });
});

t.test('EMBEDDED_VACUUM_INTERVAL_S=0: no vacuum, and every ingestion again adds its size', async (t) => {
  const { sizes, lines } = await truncateAndIngestAgain(t, 0, 3);
  // The vectors' table is truncated with the only collection that has vectors; the other tables
  // keep their deleted rows' space (3.9, 4.8, 5.7 MB here, against at most 1.15 times the first with vacuum).
  t.ok(sizes[2]! >= sizes[0]! * 1.35, `the tables after each ingestion: ${sizes.map((bytes) => `${Math.round(bytes / 1024)} KB`).join(', ')}`);
  t.notOk(lines.some((line) => line.msg === 'vacuumed the embedded database'));
});

t.test('a duty that keeps failing (a full disk) is one warn line, then debug lines, and one line when it works again', async (t) => {
  const { lines, stream } = logLines();
  let failuresLeft = 4;
  let checkpoints = 0;
  const sql = Object.assign(async (query: string) => {
    if (query.startsWith('select pg_wal_lsn_diff')) return [{ bytes: 2 * MB }];
    if (query === 'checkpoint') {
      if (failuresLeft-- > 0) throw new Error('could not write to file "pg_wal/xlogtemp.1": No space left on device');
      checkpoints += 1;
      return [];
    }
    throw new Error(`unexpected statement: ${query}`);
  }, { dialect: 'pglite' as const, transaction: async () => { throw new Error('no transactions here'); } }) as SqlRunner;
  const upkeep = new EmbeddedDatabaseUpkeep(sql, createLogger('trace', stream), { checkpointWalBytes: MB, vacuumIntervalMs: 0, checkIntervalMs: 20 });
  upkeep.start();
  t.teardown(() => upkeep.stop());
  for (const deadline = Date.now() + 5000; checkpoints < 2 && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 10));
  await upkeep.stop();
  const failed = lines.filter((line) => /^the embedded database's checkpoint failed/.test(line.msg ?? ''));
  t.same(failed.map((line) => line.level), [40, 20, 20, 20], 'the first failure a warn line, the 3 after it debug lines');
  t.match(failed[0], { duty: 'checkpoint', err: { message: /No space left on device/ } });
  t.same(lines.filter((line) => line.msg === "the embedded database's checkpoint works again").map((line) => line.level), [30], 'one info line when it works again, not one a checkpoint');
});
