/**
 * The embedded database is checkpointed once its write-ahead log passes EMBEDDED_CHECKPOINT_WAL_MB.
 * PGlite's own max_wal_size is 1GB and cannot be set, so it checkpointed only after about half a
 * gigabyte of log and kept up to a gigabyte of it in DATA_DIR (bench/documents/wal-size.ts).
 */
import t, { type Test } from 'tap';
import { logLines } from '../support/log-lines.js';
import { adminTestApp, multipartUpload, waitForIngestion } from '../support/test-app.js';

const MB = 1024 * 1024;

async function ingestionWithCheckpointsAt(t: Test, walBytes: number) {
  const { lines, stream: logStream } = logLines();
  const { app, services, admin } = await adminTestApp(t, 'pglite', { embeddedCheckpointWalBytes: walBytes }, { logStream });
  const redo = async () => (await services.sql<{ redo_lsn: string }>('select (pg_control_checkpoint()).redo_lsn'))[0]!.redo_lsn;
  const walSinceCheckpoint = async () => Number((await services.sql<{ bytes: string }>(
    'select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (pg_control_checkpoint()).redo_lsn) as bytes',
  ))[0]!.bytes);
  const redoBefore = await redo();
  t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'logs' } })).statusCode, 201);
  const sentence = (index: number) => `Ledger entry ${index} records the cargo of the schooner and the tide at the quay. `;
  const files = Array.from({ length: 20 }, (_, file) => ({
    filename: `ledger-${file}.txt`, content: Array.from({ length: 300 }, (_, index) => sentence(file * 1000 + index)).join(''), contentType: 'text/plain',
  }));
  const upload = multipartUpload(files);
  const answer = await app.inject({ method: 'POST', url: '/v1/collections/logs/documents/batch', headers: { ...admin, ...upload.headers }, payload: upload.payload });
  t.equal(answer.statusCode, 202, answer.body);
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
