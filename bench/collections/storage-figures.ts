/**
 * The requests that report chunk counts and storage (`GET /v1/stats`, `GET
 * /v1/collections/{name}/stats`, `GET /v1/usage`) over a collection of `chunks` chunks (500,000 by
 * default) of about 2 kB of corpus text, and what keeping their totals costs the writes: the chunk
 * rows are written by the service's own `insertChunks` (500 a statement, as raw-vector upserts and
 * ingestion write them; no index entries, which these figures do not read) and deleted by
 * `deleteCollectionRows`, as a truncate deletes them. Since migration 0027 the figures come from
 * per-collection totals kept by triggers on `chunks`; before, each request counted and summed every
 * chunk row (run this file on an earlier tree for the before figures).
 *
 * Run: npx tsx bench/collections/storage-figures.ts [chunks=500000]
 * DATABASE_URL: PostgreSQL (that database is dropped and recreated); else the embedded database in
 * a temporary directory. Writes bench/results/storage-figures-<pglite|postgresql>.json (BENCH_OUT
 * overrides).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deleteCollectionRows, insertChunks } from '../../src/documents/chunk-store.js';
import { documentText } from '../search/corpus.js';
import { percentile, roundTo } from '../search/harness.js';
import { serviceInProcess } from '../support/service-in-process.js';
import { callService, machineDescription, writeResult } from '../support/service-process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const chunkCount = Number(process.argv[2] ?? 500_000);
const database = process.env.DATABASE_URL ? 'postgresql' : 'pglite';
const out = process.env.BENCH_OUT ?? path.join(root, `bench/results/storage-figures-${database}.json`);
const CHUNKS_A_CALL = 10_000;
const CHUNK_CHARACTERS = 2_000;
const REQUESTS = 9;
const ROUTES = ['/v1/stats', '/v1/collections/stored/stats', '/v1/usage'];
const log = (message: string) => process.stderr.write(`[storage-figures] ${message}\n`);

const { services, baseUrl, key, close } = await serviceInProcess('storage-figures');
const collection = await callService(baseUrl, key, '/v1/collections', { method: 'POST', json: { name: 'stored' } }) as { id: string };

log(`writing ${chunkCount} chunks`);
const chunkText = (index: number) => {
  let text = documentText(index);
  while (text.length < CHUNK_CHARACTERS) text += ` ${documentText(index + text.length)}`;
  return text.slice(0, CHUNK_CHARACTERS);
};
let insertMs = 0;
for (let written = 0; written < chunkCount; written += CHUNKS_A_CALL) {
  const chunks = Array.from({ length: Math.min(CHUNKS_A_CALL, chunkCount - written) }, (_, index) => ({
    id: randomUUID(), documentId: null, chunkIndex: 0, text: chunkText(written + index), metadata: {}, tenant: null,
  }));
  const started = performance.now();
  await insertChunks(services.sql, collection.id, chunks);
  insertMs += performance.now() - started;
}

const api: Record<string, number> = {};
for (const route of ROUTES) {
  const times: number[] = [];
  for (let request = 0; request < REQUESTS; request++) {
    const started = performance.now();
    await callService(baseUrl, key, route);
    times.push(performance.now() - started);
  }
  api[`${route} median_ms`] = roundTo(percentile(Float64Array.from(times).sort(), 0.5), 1);
}
const stats = await callService(baseUrl, key, '/v1/collections/stored/stats') as { chunks: number; storage: { chunk_text_bytes: number } };
if (stats.chunks !== chunkCount) throw new Error(`the collection's stats count ${stats.chunks} chunks, not ${chunkCount}`);

log('deleting the rows as a truncate does');
const deleteStarted = performance.now();
const deleted = await deleteCollectionRows(services.sql, collection.id);
const deleteMs = performance.now() - deleteStarted;
if (deleted.chunkKeys.length !== chunkCount) throw new Error(`deleted ${deleted.chunkKeys.length} chunks, not ${chunkCount}`);

await close();

await writeResult(out, {
  benchmark: 'storage-figures', date: new Date().toISOString(), database, machine: machineDescription(),
  chunks: chunkCount, chunk_text_bytes: stats.storage.chunk_text_bytes,
  insert_ms_per_10000_chunks: roundTo(insertMs / (chunkCount / CHUNKS_A_CALL), 1),
  api,
  delete_rows_ms: Math.round(deleteMs),
});
