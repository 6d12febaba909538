import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { pruneTranspileCache, TRANSPILED_FILE_LIFETIME_MS } from '../support/transpile-cache.mjs';

t.test('pruning the transpile cache removes the files written before the lifetime and keeps the rest', async (t) => {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-transpile-cache-test-'));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  const now = Date.now();
  const writeAged = async (name: string, ageMs: number) => {
    const file = path.join(directory, name);
    await writeFile(file, 'export {};\n');
    const written = new Date(now - ageMs);
    await utimes(file, written, written);
  };
  await writeAged('stale.js', TRANSPILED_FILE_LIFETIME_MS + 60_000);
  await writeAged('just-inside.js', TRANSPILED_FILE_LIFETIME_MS - 60_000);
  await writeAged('fresh.js', 0);

  t.equal(await pruneTranspileCache(directory, TRANSPILED_FILE_LIFETIME_MS, now), 1);
  t.same((await readdir(directory)).sort(), ['fresh.js', 'just-inside.js']);
});

t.test('pruning a cache that was never made removes nothing', async (t) => {
  t.equal(await pruneTranspileCache(path.join(os.tmpdir(), `rs-no-such-cache-${process.pid}`)), 0);
});
