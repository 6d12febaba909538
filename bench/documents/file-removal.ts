/**
 * Removing the element pictures of many documents from the local file store, as a truncate of a
 * multimodal collection does (FileStore.removeMany): each document's picture is written through the
 * store, then every document's prefix is removed at once. In the store's process, no service.
 *
 * Run: npx tsx bench/documents/file-removal.ts [documents=5000,20000]
 * Writes bench/results/file-removal.json (BENCH_OUT overrides).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalFileStore } from '../../src/storage/file-store.js';
import { machineDescription, writeResult } from '../support/service-process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const sizes = (process.argv[2] ?? '5000,20000').split(',').map(Number);
const out = process.env.BENCH_OUT ?? path.join(root, 'bench/results/file-removal.json');

const runs = [];
for (const documents of sizes) {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-file-removal-'));
  const store = new LocalFileStore(directory);
  const prefixes = Array.from({ length: documents }, (_, index) => `collection/elements/document-${index}`);
  for (const prefix of prefixes) await store.write(`${prefix}/0`, Buffer.from('a picture'));
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await store.removeMany([], prefixes);
  const cpu = process.cpuUsage(cpuBefore);
  const run = { documents, remove_ms: Math.round(performance.now() - started), cpu_ms: Math.round((cpu.user + cpu.system) / 1000) };
  process.stderr.write(`[file-removal] ${JSON.stringify(run)}\n`);
  runs.push(run);
  await rm(directory, { recursive: true, force: true });
}
await writeResult(out, { benchmark: 'file-removal', date: new Date().toISOString(), store: 'local', machine: machineDescription(), runs });
