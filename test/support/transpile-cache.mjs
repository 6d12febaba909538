// Where typescript-hooks.mjs keeps the test processes' transpiled sources, and its pruning (tap's
// `before` script, prune-transpile-cache.mjs). Every edit of a source adds a file, and nothing else
// removes them.
import { readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export const TRANSPILE_CACHE_DIRECTORY = path.join(os.tmpdir(), 'rs-test-transpiled');

/** Files kept this long after they were written; a source unchanged for longer is transpiled once more. */
export const TRANSPILED_FILE_LIFETIME_MS = 7 * 24 * 3600 * 1000;

/** Removes the files written more than `lifetimeMs` before `now`; returns how many went. */
export async function pruneTranspileCache(directory = TRANSPILE_CACHE_DIRECTORY, lifetimeMs = TRANSPILED_FILE_LIFETIME_MS, now = Date.now()) {
  const names = await readdir(directory).catch((error) => {
    if (error?.code === 'ENOENT') return [];
    throw error;
  });
  let removed = 0;
  for (const name of names) {
    const file = path.join(directory, name);
    // Another test run may remove or rename the same file meanwhile.
    const written = await stat(file).then((info) => info.mtimeMs, () => undefined);
    if (written === undefined || now - written <= lifetimeMs) continue;
    await rm(file, { force: true });
    removed++;
  }
  return removed;
}
