/**
 * The lock on an embedded database directory (src/db/data-dir-lock.ts): who may take it over and
 * how fast. test/process/data-dir-lock.test.ts runs the same story with real service processes.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { currentIdentity, DataDirectoryInUseError, LOCK_OWNER_FILE, lockDataDirectory, type LockOwner } from '../../src/db/data-dir-lock.js';
import { openDatabase } from '../../src/db/database.js';
import { scratchDatabaseUrl } from '../support/test-app.js';

async function scratchDirectory(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-lock-'));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  return directory;
}

/** A lock as another process would have left it, with its mtime (default: just now). */
async function leaveLock(dataDir: string, owner: LockOwner | undefined, mtime = new Date()): Promise<string> {
  const lockPath = `${dataDir}.lock`;
  await mkdir(lockPath);
  if (owner) await writeFile(path.join(lockPath, LOCK_OWNER_FILE), JSON.stringify(owner));
  await utimes(lockPath, mtime, mtime);
  return lockPath;
}

async function ownerOf(lockPath: string): Promise<LockOwner> {
  return JSON.parse(await readFile(path.join(lockPath, LOCK_OWNER_FILE), 'utf8')) as LockOwner;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(() => true, () => false);
}

/** A pid on this host that no process has any more. */
async function pidOfAnExitedProcess(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

async function timed<T>(action: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await action();
  return { value, ms: Date.now() - started };
}

const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);

t.test('openDatabase: one holder per directory, released on close and after a failed open; none in memory', async (t) => {
  const directory = await scratchDirectory(t);
  const dataDir = path.join(directory, 'db');
  const lockPath = `${dataDir}.lock`;

  const first = await openDatabase({ dataDir });
  t.teardown(() => first.close());
  t.same({ ...(await ownerOf(lockPath)), since: 'x' }, { ...currentIdentity(), since: 'x' }, 'the lock names this process');
  const second = await refusal(openDatabase({ dataDir }));
  t.ok(second instanceof DataDirectoryInUseError);
  t.match(String(second), `the embedded database ${dataDir} is in use by process ${process.pid}`);
  t.match(String(second), /already open in this process/);
  await first.orm.em.getConnection().execute('select 1');
  t.pass('the open database is untouched');
  await first.close();
  t.notOk(await exists(lockPath), 'closing releases the lock');
  const again = await openDatabase({ dataDir });
  await again.close();
  await again.close();
  t.notOk(await exists(lockPath), 'closing twice is harmless');

  const notADirectory = path.join(directory, 'file');
  await writeFile(notADirectory, 'not a database');
  await t.rejects(openDatabase({ dataDir: notADirectory }));
  t.notOk(await exists(`${notADirectory}.lock`), 'a start that failed leaves no lock behind');

  const inMemory = await Promise.all([openDatabase({}), openDatabase({})]);
  await Promise.all(inMemory.map((database) => database.close()));
  t.pass('in-memory databases (tests) take no lock: two open side by side');
});

t.test('a holder on this host is judged by its pid, at once', async (t) => {
  const directory = await scratchDirectory(t);
  const self = currentIdentity();

  const killed = path.join(directory, 'killed');
  const deadPid = await pidOfAnExitedProcess();
  // A fresh mtime: waiting it out would take the full stale window.
  await leaveLock(killed, { ...self, pid: deadPid });
  const takeover = await timed(() => lockDataDirectory(killed));
  t.ok(takeover.ms < 1_000, `a lock whose process is gone (kill -9) is taken over at once: ${takeover.ms} ms`);
  t.equal((await ownerOf(takeover.value.path)).pid, process.pid);
  await takeover.value.release();

  const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
  t.teardown(() => { live.kill('SIGKILL'); });
  const held = path.join(directory, 'held');
  const heldLock = await leaveLock(held, { ...self, pid: live.pid! });
  const refused = await timed(() => refusal(lockDataDirectory(held)));
  t.ok(refused.value instanceof DataDirectoryInUseError, 'a live holder refuses the start');
  t.ok(refused.ms < 1_000, `at once: ${refused.ms} ms`);
  t.match(String(refused.value), `in use by process ${live.pid} on host ${self.hostname}`);
  t.match(String(refused.value), `If pid ${live.pid} is not a retrieval-service, remove ${heldLock}`);
  t.equal((await ownerOf(heldLock)).pid, live.pid, 'and its lock is left alone');

  if (self.bootId) {
    const rebooted = path.join(directory, 'rebooted');
    await leaveLock(rebooted, { ...self, pid: live.pid!, bootId: 'an-earlier-boot' });
    const lock = await lockDataDirectory(rebooted);
    t.pass('a holder from an earlier boot is dead, whatever process has its pid now');
    await lock.release();
  }

  const restartedInPlace = path.join(directory, 'restarted');
  await leaveLock(restartedInPlace, self);
  const lock = await lockDataDirectory(restartedInPlace);
  t.pass('our own pid in a lock this process does not hold is a predecessor (a container restarted in place)');
  await lock.release();
});

t.test('a holder whose pid cannot be checked is waited out for the stale window', async (t) => {
  const directory = await scratchDirectory(t);
  const staleMs = 2_000;
  const elsewhere: LockOwner = { pid: 4242, hostname: 'another-host', since: new Date().toISOString() };

  const abandoned = path.join(directory, 'abandoned');
  await leaveLock(abandoned, elsewhere);
  const waited = await timed(() => lockDataDirectory(abandoned, { staleMs }));
  t.ok(waited.ms >= staleMs - 100 && waited.ms < staleMs + 2_000, `a lock nobody refreshes is taken once stale: ${waited.ms} ms`);
  await waited.value.release();

  const old = path.join(directory, 'old');
  await leaveLock(old, undefined, new Date(Date.now() - 60_000));
  const atOnce = await timed(() => lockDataDirectory(old, { staleMs }));
  t.ok(atOnce.ms < 1_000, `one already stale, without an owner record, at once: ${atOnce.ms} ms`);
  await atOnce.value.release();

  const kept = path.join(directory, 'kept');
  const keptLock = await leaveLock(kept, elsewhere);
  const refresh = setInterval(() => { const now = new Date(); void utimes(keptLock, now, now); }, 500);
  t.teardown(() => clearInterval(refresh));
  const refused = await timed(() => refusal(lockDataDirectory(kept, { staleMs })));
  clearInterval(refresh);
  t.ok(refused.value instanceof DataDirectoryInUseError, 'one kept fresh refuses the start');
  t.ok(refused.ms >= staleMs, `after the stale window: ${refused.ms} ms`);
  t.match(String(refused.value), 'in use by process 4242 on host another-host');
  t.match(String(refused.value), `Its pid cannot be checked from here`);
  t.match(String(refused.value), `remove ${keptLock}`);
});

t.test('a lock taken over while held is reported', async (t) => {
  const directory = await scratchDirectory(t);
  const compromised: Error[] = [];
  const lock = await lockDataDirectory(path.join(directory, 'db'), { staleMs: 2_000, onCompromised: (error) => compromised.push(error) });
  await rm(lock.path, { recursive: true });
  for (let waited = 0; waited < 5_000 && compromised.length === 0; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(compromised.length, 1, 'within the update interval');
  await lock.release();
  t.pass('releasing it afterwards is harmless');
});

if (process.env.TEST_DATABASE_URL) {
  t.test('PostgreSQL takes no lock, even given a data directory', async (t) => {
    const directory = await scratchDirectory(t);
    const database = await openDatabase({ databaseUrl: await scratchDatabaseUrl(t), dataDir: path.join(directory, 'db') });
    t.teardown(() => database.close());
    t.notOk(await exists(path.join(directory, 'db.lock')));
  });
}
