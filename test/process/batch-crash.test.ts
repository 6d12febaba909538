/**
 * A crash in the middle of a batch: the real server process is killed with SIGKILL while a batch
 * of documents is being ingested, a new process starts on the same DATA_DIR (and database), and
 * every document of the batch ends ready or failed, none pending or processing, with exactly one
 * vector per chunk. On PostgreSQL the jobs of the dead process are taken over when their lease
 * lapses: JOB_LEASE_S is 5 there (the default 60 made that run a minute longer), still several of
 * the live process's heartbeats (four a lease).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freePort } from '../support/free-port.js';
import { startServer } from '../support/server-process.js';
import { createScratchDatabase, multipartUpload } from '../support/test-app.js';

const FILES = 200;

/** A report of several paragraphs, so each document makes a few chunks. */
function report(n: number): string {
  return Array.from({ length: 10 }, (_, index) =>
    `Report ${n}, section ${index}: the harbour crane schedule for berth ${n % 17} keeps containers moving between tides; uniquemarker${n}.`).join('\n\n');
}

const backends = process.env.TEST_DATABASE_URL ? ['pglite', 'postgresql'] : ['pglite'];

for (const backend of backends) {
  t.test(`${backend}: SIGKILL mid-batch, restart, every document ends ready or failed`, async (t) => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-crash-'));
    const scratch = backend === 'postgresql' ? await createScratchDatabase(process.env.TEST_DATABASE_URL!) : undefined;
    const port = await freePort();
    const env = { PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: scratch?.url ?? '', JOB_LEASE_S: '5' };
    const base = `http://127.0.0.1:${port}`;
    let running: ChildProcess | undefined;
    t.teardown(async () => {
      running?.kill('SIGKILL');
      await scratch?.drop();
      await rm(dataDir, { recursive: true, force: true });
    });

    const first = await startServer(env);
    running = first.child;
    const setup = await fetch(`${base}/v1/auth/setup`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'admin@example.com', password: 'a long passphrase' }),
    });
    t.equal(setup.status, 201);
    const cookie = (setup.headers.get('set-cookie') ?? '').split(';')[0]!;
    const call = (url: string, init: RequestInit = {}) => fetch(`${base}${url}`, { ...init, headers: { cookie, ...(init.headers ?? {}) } });
    t.equal((await call('/v1/collections', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'crash', chunk_size: 300, chunk_overlap: 0 }) })).status, 201);

    const body = multipartUpload(Array.from({ length: FILES }, (_, n) => ({ filename: `report-${n}.txt`, content: report(n), contentType: 'text/plain' })));
    const accepted = await call('/v1/collections/crash/documents/batch', { method: 'POST', headers: body.headers, body: body.payload });
    t.equal(accepted.status, 202);
    const batchId = ((await accepted.json()) as { batch_id: string }).batch_id;

    // Kill as soon as part of the batch is done and part is not.
    let atKill: { by_status: Record<string, number>; done: boolean } | undefined;
    for (let attempt = 0; attempt < 2000; attempt++) {
      const status = (await (await call(`/v1/collections/crash/batches/${batchId}/status`)).json()) as { by_status: Record<string, number>; done: boolean };
      if (status.by_status.ready! > 0 || status.done) {
        first.child.kill('SIGKILL');
        atKill = status;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await new Promise((resolve) => first.child.once('exit', resolve));
    t.ok(atKill, 'the batch started before the kill');
    t.notOk(atKill?.done, `killed mid-batch: ${JSON.stringify(atKill?.by_status)}`);

    const second = await startServer(env);
    running = second.child;
    let status: { by_status: Record<string, number>; done: boolean; total: number } | undefined;
    const deadline = Date.now() + 240_000;
    while (Date.now() < deadline) {
      status = (await (await call(`/v1/collections/crash/batches/${batchId}/status`)).json()) as typeof status;
      if (status!.done) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    t.ok(status?.done, `the batch finishes after the restart: ${JSON.stringify(status?.by_status)}`);
    t.equal(status?.total, FILES);
    t.equal(status!.by_status.pending, 0, 'none pending');
    t.equal(status!.by_status.processing, 0, 'none processing');
    t.equal(status!.by_status.ready! + status!.by_status.failed!, FILES, 'every document ready or failed');
    t.equal(status!.by_status.ready, FILES, 'and, the files being good, all ready');

    const stats = (await (await call('/v1/collections/crash/stats')).json()) as { chunks: number; vectors: number };
    t.ok(stats.chunks >= FILES, `chunks: ${stats.chunks}`);
    t.equal(stats.vectors, stats.chunks, 'one vector per chunk: nothing half-written survives');
    for (const n of [0, FILES / 2, FILES - 1]) {
      const hits = (await (await call('/v1/collections/crash/query', {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: `uniquemarker${n}`, search_mode: 'keyword', top_k: 1 }),
      })).json()) as { results: Array<{ metadata: Record<string, unknown>; text: string }> };
      t.match(hits.results[0]?.text, new RegExp(`uniquemarker${n}\\b`), `report ${n} is searchable`);
    }
    const stopped = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGTERM');
    await stopped;
    running = undefined;
  });
}
