import fs from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { lock } from 'proper-lockfile';
import { StartRefusal } from '../errors.js';

/**
 * One process per embedded database directory. PGlite has no lock of its own: a second process on
 * the same directory started without a word, each ran its own PostgreSQL over the same files and
 * saw only its own writes, the first then failed its close with "RuntimeError: Aborted()", and one
 * side's writes were lost (the next start could even fail to open the directory at all).
 *
 * The lock is a directory `<dataDir>.lock` next to the database (mkdir is atomic, also on network
 * file systems), made by proper-lockfile, which keeps its mtime fresh while the process lives and
 * removes it when the process exits. Inside it `owner.json` says which process holds it.
 */
export const LOCK_OWNER_FILE = 'owner.json';

/**
 * The holder touches the lock every 5 s; one untouched for 15 s is stale. This only decides for a
 * holder whose pid cannot be checked (another host, another pid namespace, no owner.json): one on
 * this host is judged by its pid at once, so a restart after `kill -9` does not wait.
 */
export const LOCK_UPDATE_MS = 5_000;
export const LOCK_STALE_MS = 15_000;
/** How often a start waiting out an unverifiable lock looks again. */
const RETRY_MS = 1_000;

export interface LockOwner {
  pid: number;
  hostname: string;
  /** Linux: `pid:[inode]` of the holder's pid namespace; a pid means something only inside it. */
  pidNamespace?: string;
  /** Linux: changes at every boot; a holder from an earlier boot is dead whatever its pid is now. */
  bootId?: string;
  since: string;
}

export interface DataDirectoryLock {
  path: string;
  release(): Promise<void>;
}

export interface LockOptions {
  /** Called when another process removed or took over the lock while this one held it. */
  onCompromised?: (error: Error) => void;
  /** Tests shorten the stale window (proper-lockfile's minimum is 2 s). */
  staleMs?: number;
}

export class DataDirectoryInUseError extends StartRefusal {
  constructor(readonly dataDir: string, readonly lockPath: string, readonly owner: LockOwner | undefined, readonly waited: { ms: number; staleMs: number }) {
    super(describeRefusal(dataDir, lockPath, owner, waited));
  }
}

function describeRefusal(dataDir: string, lockPath: string, owner: LockOwner | undefined, waited: { ms: number; staleMs: number }): string {
  const holder = owner ? `process ${owner.pid} on host ${owner.hostname} (holding it since ${owner.since})` : 'another process (which has not recorded its pid)';
  const remedy = heldHere.has(lockPath)
    ? 'It is already open in this process.'
    : owner !== undefined && isVerifiable(owner, currentIdentity())
      ? `Stop that process, or start this one with another DATA_DIR. If pid ${owner.pid} is not a retrieval-service, remove ${lockPath}.`
      : `Its pid cannot be checked from here, so this start waited ${Math.round(waited.ms / 1000)} s for the lock to go stale (${waited.staleMs / 1000} s without an update) and it was kept fresh. Stop that process, or start this one with another DATA_DIR; if you are sure no process uses it, remove ${lockPath}.`;
  return `the embedded database ${dataDir} is in use by ${holder}: two processes on one DATA_DIR overwrite each other's data, so this one does not start. ${remedy}`;
}

/** This process's identity as a lock holder; pid namespace and boot id only where /proc has them. */
export function currentIdentity(): LockOwner {
  linuxIdentity ??= readLinuxIdentity();
  return { pid: process.pid, hostname: os.hostname(), ...linuxIdentity, since: new Date().toISOString() };
}

let linuxIdentity: { pidNamespace?: string; bootId?: string } | undefined;

function readLinuxIdentity(): { pidNamespace?: string; bootId?: string } {
  if (process.platform !== 'linux') return {};
  const attempt = (read: () => string) => { try { return read(); } catch { return undefined; } };
  const pidNamespace = attempt(() => fs.readlinkSync('/proc/self/ns/pid'));
  const bootId = attempt(() => fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
  return { ...(pidNamespace ? { pidNamespace } : {}), ...(bootId ? { bootId } : {}) };
}

/** A pid can be checked only on the same host, inside the same pid namespace. */
function isVerifiable(owner: LockOwner, self: LockOwner): boolean {
  return owner.hostname === self.hostname && owner.pidNamespace === self.pidNamespace;
}

/** Lock paths this process holds: its own pid in an owner record is then itself, not a predecessor. */
const heldHere = new Set<string>();

type HolderState = 'alive' | 'dead' | 'unknown';

export function holderState(owner: LockOwner | undefined, lockPath: string, self: LockOwner = currentIdentity()): HolderState {
  if (owner === undefined || !isVerifiable(owner, self)) return 'unknown';
  // Same host, another boot: every process of that boot is gone.
  if (owner.bootId !== undefined && self.bootId !== undefined && owner.bootId !== self.bootId) return 'dead';
  // Our own pid, not held by us: an earlier process that had this pid (a container restarted in place).
  if (owner.pid === self.pid) return heldHere.has(lockPath) ? 'alive' : 'dead';
  try {
    process.kill(owner.pid, 0);
    return 'alive';
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'ESRCH' ? 'dead' : 'alive';
  }
}

async function readOwner(lockPath: string): Promise<LockOwner | undefined> {
  try {
    const owner = JSON.parse(await readFile(path.join(lockPath, LOCK_OWNER_FILE), 'utf8')) as LockOwner;
    return Number.isInteger(owner.pid) && typeof owner.hostname === 'string' ? owner : undefined;
  } catch {
    // Missing (the holder is between mkdir and writing it) or unreadable: judged by mtime alone.
    return undefined;
  }
}

/**
 * The file system proper-lockfile works through, changed in two places: the lock directory is
 * made together with its owner record, before proper-lockfile sets the mtime it will check (a
 * file written into it later would change that mtime and look like a takeover), and it is removed
 * with that record in it (proper-lockfile's rmdir wants an empty directory).
 */
function fileSystemRecording(owner: LockOwner) {
  const removeLockDirectory = (directory: string, callback: (error: NodeJS.ErrnoException | null) => void) => fs.rm(directory, { recursive: true }, callback);
  return {
    ...fs,
    mkdir(directory: string, callback: (error: NodeJS.ErrnoException | null) => void) {
      fs.mkdir(directory, (error) => {
        if (error) return callback(error);
        fs.writeFile(path.join(directory, LOCK_OWNER_FILE), `${JSON.stringify(owner)}\n`, (writeError) => {
          if (!writeError) return callback(null);
          removeLockDirectory(directory, () => callback(writeError));
        });
      });
    },
    rmdir: removeLockDirectory,
    rmdirSync: (directory: string) => fs.rmSync(directory, { recursive: true }),
  };
}

/**
 * Another process taking the lock over means it has opened the database: writing on would damage
 * its data, and so would a clean close (a shutdown checkpoint), so the process ends at once.
 */
function exitAtOnce(dataDir: string) {
  return (error: Error) => {
    process.stderr.write(`retrieval-service: lost the lock on the embedded database ${dataDir} (${error.message}): another process may have opened it; exiting at once without closing the database\n`);
    process.exit(1);
  };
}

/**
 * Takes the lock on an embedded database directory, before it is opened. A holder on this host is
 * judged by its pid: a live one refuses the start at once, a dead one (`kill -9`, a crash, a power
 * cut) is cleared at once. A holder whose pid cannot be checked is waited out up to the stale
 * window, then the start is refused if it is still kept fresh.
 */
export async function lockDataDirectory(dataDir: string, options: LockOptions = {}): Promise<DataDirectoryLock> {
  const lockPath = `${dataDir}.lock`;
  const staleMs = Math.max(options.staleMs ?? LOCK_STALE_MS, 2_000);
  // The lock sits beside the database, in a directory that may not exist yet (a first start).
  await mkdir(path.dirname(dataDir), { recursive: true });
  const started = Date.now();
  for (;;) {
    try {
      const release = await lock(dataDir, {
        lockfilePath: lockPath,
        realpath: false,
        stale: staleMs,
        update: Math.min(LOCK_UPDATE_MS, staleMs / 3),
        fs: fileSystemRecording(currentIdentity()),
        onCompromised: (error) => {
          heldHere.delete(lockPath);
          (options.onCompromised ?? exitAtOnce(dataDir))(error);
        },
      });
      heldHere.add(lockPath);
      return { path: lockPath, release: onceOnly(async () => {
        heldHere.delete(lockPath);
        await release().catch((error: NodeJS.ErrnoException) => {
          // Compromised earlier: proper-lockfile no longer counts it as ours and leaves it alone.
          if (error.code !== 'ERELEASED') throw error;
        });
      }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    }
    const owner = await readOwner(lockPath);
    const state = holderState(owner, lockPath);
    const waited = Date.now() - started;
    if (state === 'alive' || waited > staleMs + 2 * RETRY_MS) throw new DataDirectoryInUseError(dataDir, lockPath, owner, { ms: waited, staleMs });
    // Two starts clearing one dead lock at the same moment could both get in, as with
    // proper-lockfile's own stale takeover; the loser finds its lock gone at its next update
    // (within 5 s) and exits (exitAtOnce).
    if (state === 'dead') await rm(lockPath, { recursive: true, force: true });
    // Unknown: proper-lockfile takes the lock once its mtime is older than the stale window.
    else await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

function onceOnly(action: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= action());
}
