import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freePort } from '../support/free-port.js';

/**
 * The service as `npm start` runs it: its own process, the embedded database in DATA_DIR,
 * migrations at start, and a graceful stop on SIGTERM that keeps what was written.
 */
async function startServer(dataDir: string, port: number): Promise<{ child: ChildProcess; output: () => string }> {
  let output = '';
  // Run outside tap's coverage (package.json runs this folder with --disable-coverage): the child's
  // tsx-transpiled sources would otherwise be merged into the suite's coverage of the same files.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_V8_COVERAGE' && name !== 'NODE_OPTIONS'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info', DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  for (let attempt = 0; attempt < 240; attempt++) {
    if (child.exitCode !== null) throw new Error(`server exited early: ${output}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return { child, output: () => output };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  child.kill('SIGKILL');
  throw new Error(`server did not answer /health: ${output}`);
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
