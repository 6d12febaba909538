import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freePort } from '../support/free-port.js';
import { startServer as startServerProcess } from '../support/server-process.js';

/**
 * The service as `npm start` runs it: its own process, the embedded database in DATA_DIR,
 * migrations at start, and a graceful stop on SIGTERM that keeps what was written.
 */
function startServer(dataDir: string, port: number) {
  return startServerProcess({ PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info', DATABASE_URL: '' });
}

async function stopServer(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

t.test('serve: data survives a SIGTERM and a restart on the same DATA_DIR', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-serve-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;

  const first = await startServer(dataDir, port);
  t.same(await (await fetch(`${base}/v1/auth/setup-status`)).json(), { needs_setup: true });
  t.equal((await fetch(`${base}/health/ready`)).status, 200);
  const setup = await fetch(`${base}/v1/auth/setup`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@example.com', password: 'a long passphrase' }),
  });
  t.equal(setup.status, 201);
  t.equal(await stopServer(first.child), 0, 'SIGTERM ends the process with code 0');
  t.match(first.output(), /shutting down/);
  t.match(first.output(), /"msg":"stopped"/, 'the database was closed before exit');

  const second = await startServer(dataDir, port);
  t.same(await (await fetch(`${base}/v1/auth/setup-status`)).json(), { needs_setup: false }, 'the admin created before the restart is still there');
  const login = await fetch(`${base}/v1/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@example.com', password: 'a long passphrase' }),
  });
  t.equal(login.status, 200);
  t.equal(await stopServer(second.child), 0);
});
