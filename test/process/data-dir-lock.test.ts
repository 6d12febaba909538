/**
 * One process per DATA_DIR. A second service started on the same DATA_DIR used to start without a
 * word: both answered, each saw its own collections, the first then failed its close with
 * "RuntimeError: Aborted()" (exit 1), and after a restart one side's writes were gone. Now the
 * second start is refused before it opens the database; the lock goes with a graceful stop, and a
 * lock left by a process killed with SIGKILL does not hold up the next start.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freePort } from '../support/free-port.js';
import { answersHealth, spawnServer, startServer } from '../support/server-process.js';

const ADMIN = { email: 'admin@example.com', password: 'a long passphrase' };

function serverEnv(dataDir: string, port: number): Record<string, string> {
  return { PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'info' };
}

/** Starts the service and waits for it to exit on its own, or for it to answer /health (then it is stopped). */
async function startExpectingRefusal(env: Record<string, string>): Promise<{ code: number | null; output: string; answered: boolean }> {
  const server = spawnServer({ HOST: '127.0.0.1', ...env });
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', resolve));
  const answered = await answersHealth(server, env.PORT!);
  if (answered) server.child.kill('SIGTERM');
  return { code: await exited, output: server.output(), answered };
}

async function stopGracefully(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  return exited;
}

/**
 * Resolves with the milliseconds from now until a process other than `previous` holds the lock (its
 * owner record names it): polled while the process starts, so it measures the lock, not the whole start.
 */
function lockTaken(dataDir: string, previous?: number): Promise<{ pid: number; ms: number }> {
  const ownerFile = path.join(dataDir, 'db.lock', 'owner.json');
  const since = Date.now();
  return (async () => {
    while (Date.now() - since < 60_000) {
      // Missing, or read while its holder is still writing it (half a record does not parse): not taken yet.
      const owner = await readFile(ownerFile, 'utf8').then((text) => JSON.parse(text) as { pid: number }).catch(() => undefined);
      if (owner !== undefined && owner.pid !== previous) return { pid: owner.pid, ms: Date.now() - since };
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`no process other than ${previous} took ${ownerFile} within 60 s`);
  })();
}

async function needsSetup(port: number): Promise<boolean> {
  return ((await (await fetch(`http://127.0.0.1:${port}/v1/auth/setup-status`)).json()) as { needs_setup: boolean }).needs_setup;
}

t.test('a second service on the same DATA_DIR is refused before it opens the database; after a graceful stop the next start succeeds', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-lock-'));
  const running: ChildProcess[] = [];
  t.teardown(async () => {
    for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });
  const [firstPort, secondPort] = [await freePort(), await freePort()];

  const first = await startServer(serverEnv(dataDir, firstPort));
  running.push(first.child);
  const setup = await fetch(`http://127.0.0.1:${firstPort}/v1/auth/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
  t.equal(setup.status, 201);

  const second = await startExpectingRefusal(serverEnv(dataDir, secondPort));
  t.notOk(second.answered, 'the second process never answered');
  t.not(second.code, 0, 'it exits non-zero');
  t.match(second.output, `the embedded database ${path.join(dataDir, 'db')} is in use by process ${first.child.pid}`, 'naming the directory and the pid holding it');
  t.match(second.output, /start this one with another DATA_DIR/);
  t.match(second.output, path.join(dataDir, 'db.lock'), 'and the lock a person may remove');
  t.notMatch(second.output, /database ready/, 'it did not open the database');

  t.equal((await fetch(`http://127.0.0.1:${firstPort}/health/ready`)).status, 200, 'the first is undisturbed');
  t.equal(await needsSetup(firstPort), false);
  t.equal(await stopGracefully(first.child), 0, 'the first stops cleanly (its database close used to abort)');

  const taken = lockTaken(dataDir, first.child.pid);
  const third = await startServer(serverEnv(dataDir, secondPort));
  running.push(third.child);
  const { pid, ms } = await taken;
  t.equal(pid, third.child.pid, 'the next start holds the lock');
  t.comment(`after a graceful stop, the next process held the lock ${ms} ms after it was spawned`);
  t.equal(await needsSetup(secondPort), false, 'what the first wrote is there');
  t.equal(await stopGracefully(third.child), 0);
});

t.test('a lock left by a process killed with SIGKILL does not hold up the next start', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-lock-'));
  const running: ChildProcess[] = [];
  t.teardown(async () => {
    for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });
  const port = await freePort();

  const uncontended = lockTaken(dataDir);
  const first = await startServer(serverEnv(dataDir, port));
  running.push(first.child);
  const firstLock = await uncontended;
  t.equal((await fetch(`http://127.0.0.1:${port}/v1/auth/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })).status, 201);

  const killed = new Promise((resolve) => first.child.once('exit', resolve));
  first.child.kill('SIGKILL');
  await killed;
  // An mtime an hour ahead never goes stale during this test: the next start can only get in by
  // finding the holder's pid dead.
  const lockDir = path.join(dataDir, 'db.lock');
  const anHourAhead = new Date(Date.now() + 3_600_000);
  await utimes(lockDir, anHourAhead, anHourAhead);
  const sinceKill = Date.now();
  const taken = lockTaken(dataDir, first.child.pid);
  const second = await startServer(serverEnv(dataDir, port));
  running.push(second.child);
  const afterKill = await taken;
  t.equal(afterKill.pid, second.child.pid, 'the next start holds the lock');
  t.comment(`after SIGKILL, the next process held the lock ${afterKill.ms} ms after it was spawned and answered after ${Date.now() - sinceKill} ms (an uncontended first start: ${firstLock.ms} ms to the lock)`);
  t.equal(await needsSetup(port), false, 'the admin written before the SIGKILL is there');
  t.equal(await stopGracefully(second.child), 0);
});
