/**
 * Query latency by metadata filter, through the public API on the built service, in every mode:
 * no filter; equality on one upload batch's value (50 documents), on a value 1 % of documents carry
 * and on one 10 % carry; `$in` with three batches; a value no chunk carries; ranges 1 % and 10 % of
 * documents fall in (on PostgreSQL served by the range indexes a range query asks for,
 * METADATA_RANGE_INDEXES, which are waited for before the measurements; the equalities by the
 * metadata indexes of migration 0018). Documents are
 * uploaded 50 a batch, each batch with `{batch, group: batch % 100, kind: batch % 10}` as its
 * metadata, so every chunk carries its document's values. The service is restarted after loading, so
 * queries find the embedded store's graph whole (it catches up after `ready`, and a search scans
 * exactly until it has). The filters take turns in blocks (the
 * first rotating), so the machine's drift falls on all of them alike. `top_k` 10, `skip_cache`,
 * one client. Every result is checked against its filter (`violations`, which must be 0).
 *
 * Run: npm run build && npx tsx bench/search/filtered-queries.ts [documents=30000]
 * DATABASE_URL: PostgreSQL (that database is dropped and recreated, unless BENCH_REUSE=1 finds the
 * collection loaded by an earlier run); else the embedded database. METADATA_RANGE_INDEXES=0 measures
 * PostgreSQL without range indexes.
 * Writes bench/results/filtered-queries-<pglite|postgresql>.json (BENCH_OUT overrides).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { matchesFilter } from '../../src/search/filters/match-filter.js';
import { parseFilter } from '../../src/search/filters/parse-filter.js';
import { bootstrapAdmin, keyOfEarlierAdmin, machineDescription, writeResult } from '../support/service-process.js';
import { benchmarkQueries } from './corpus.js';
import { JsonClient, resetPostgresDatabase, startServiceAt, summarize, uploadCorpusBatch, waitForIngestion } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const documentCount = Number(process.argv[2] ?? 30_000);
const databaseUrl = process.env.DATABASE_URL;
const reuse = process.env.BENCH_REUSE === '1' && databaseUrl !== undefined;
const database = databaseUrl ? 'postgresql' : 'pglite';
const out = process.env.BENCH_OUT ?? path.join(root, `bench/results/filtered-queries-${database}.json`);
const DOCUMENTS_PER_BATCH = 50;
const UPLOADS_IN_FLIGHT = 4;
const ROUNDS = 6;
const BLOCK = 20;
const MODES = ['semantic', 'keyword', 'hybrid'] as const;
const log = (message: string) => process.stderr.write(`[filtered-queries] ${message}\n`);

type Answer = { results: Array<{ metadata: Record<string, unknown> }> };

const batchCount = Math.ceil(documentCount / DOCUMENTS_PER_BATCH);
const filters: Record<string, { filter?: Record<string, unknown>; documents_passing: string }> = {
  none: { documents_passing: '100 %' },
  one_batch: { filter: { batch: 7 }, documents_passing: `${DOCUMENTS_PER_BATCH} documents` },
  three_batches_in: { filter: { batch: { $in: [7, 8, 9] } }, documents_passing: `${3 * DOCUMENTS_PER_BATCH} documents` },
  group_1_percent: { filter: { group: 7 }, documents_passing: '1 %' },
  kind_10_percent: { filter: { kind: 7 }, documents_passing: '10 %' },
  no_chunk: { filter: { batch: -1 }, documents_passing: '0' },
  range_1_percent: { filter: { batch: { $lt: Math.max(1, Math.round(batchCount / 100)) } }, documents_passing: '1 % (a range)' },
  range_10_percent: { filter: { batch: { $gte: batchCount - Math.max(1, Math.round(batchCount / 10)) } }, documents_passing: '10 % (a range)' },
};

type RangeIndexState = { field: string; type: string; state: string };

/** Asks each range filter once, then waits until no range index is being built; the indexes and the wait. */
async function settleRangeIndexes(client: JsonClient): Promise<{ range_indexes: RangeIndexState[]; waited_s: number }> {
  const started = performance.now();
  for (const name of ['range_1_percent', 'range_10_percent']) {
    await client.request('POST', '/v1/collections/filtered/query', { query: 'harbour', search_mode: 'semantic', top_k: 10, skip_cache: true, filters: filters[name]!.filter });
  }
  for (;;) {
    const stats = await client.request<{ range_indexes: RangeIndexState[] }>('GET', '/v1/collections/filtered/stats');
    const indexes = stats.body.range_indexes;
    if (!indexes.some((index) => index.state === 'building')) return { range_indexes: indexes, waited_s: Number(((performance.now() - started) / 1000).toFixed(1)) };
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function load(baseUrl: string, key: string, client: JsonClient): Promise<number> {
  await client.request('POST', '/v1/collections', { name: 'filtered' });
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: UPLOADS_IN_FLIGHT }, async () => {
    while (next < batchCount) {
      const batch = next++;
      const count = Math.min(DOCUMENTS_PER_BATCH, documentCount - batch * DOCUMENTS_PER_BATCH);
      await uploadCorpusBatch(baseUrl, key, 'filtered', batch * DOCUMENTS_PER_BATCH, count, { batch, group: batch % 100, kind: batch % 10 });
    }
  }));
  await waitForIngestion(client, 'filtered', 1000);
  return (performance.now() - started) / 1000;
}

if (databaseUrl && !reuse) await resetPostgresDatabase(databaseUrl);
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-filtered-queries-'));
const serviceEnvironment: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : {};
let service = await startServiceAt(dataDir, serviceEnvironment);
try {
  const key = reuse ? await keyOfEarlierAdmin(service.baseUrl) : (await bootstrapAdmin(service.baseUrl)).key;
  let loadSeconds: number | null = null;
  if (!reuse) {
    const loader = new JsonClient(service.baseUrl, key, 4);
    loadSeconds = await load(service.baseUrl, key, loader);
    loader.close();
    // The embedded store's graph catches up after `ready`, and searches scan exactly until it has:
    // a graceful stop waits for it and saves it, and the next start loads it.
    await service.stop();
    service = await startServiceAt(dataDir, serviceEnvironment);
  }
  const client = new JsonClient(service.baseUrl, key, 4);
  const stats = await waitForIngestion(client, 'filtered', 1000);
  log(`${stats.chunks} chunks${loadSeconds === null ? ' (loaded by an earlier run)' : ` loaded in ${loadSeconds.toFixed(0)} s`}`);
  const rangeIndexes = await settleRangeIndexes(client);
  log(`range indexes: ${rangeIndexes.range_indexes.map((index) => `${index.field} ${index.state}`).join(', ') || 'none'} (${rangeIndexes.waited_s} s)`);

  const queries = benchmarkQueries(ROUNDS * BLOCK);
  const names = Object.keys(filters);
  const byMode: Record<string, Record<string, unknown>> = {};
  for (const mode of MODES) {
    const ask = (query: string, filter: Record<string, unknown> | undefined) =>
      client.request<Answer>('POST', '/v1/collections/filtered/query', { query, search_mode: mode, top_k: 10, skip_cache: true, ...(filter ? { filters: filter } : {}) });
    for (const name of names) for (const query of queries.slice(0, BLOCK)) await ask(query, filters[name]!.filter);
    const times = new Map(names.map((name) => [name, [] as number[]]));
    const results = new Map(names.map((name) => [name, 0]));
    const violations = new Map(names.map((name) => [name, 0]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let turn = 0; turn < names.length; turn++) {
        const name = names[(round + turn) % names.length]!;
        const { filter } = filters[name]!;
        const parsed = filter && parseFilter(filter);
        for (const query of queries.slice(round * BLOCK, (round + 1) * BLOCK)) {
          const answer = await ask(query, filter);
          times.get(name)!.push(answer.milliseconds);
          results.set(name, results.get(name)! + answer.body.results.length);
          if (parsed) violations.set(name, violations.get(name)! + answer.body.results.filter((result) => !matchesFilter(parsed, result.metadata)).length);
        }
      }
    }
    byMode[mode] = Object.fromEntries(names.map((name) => [name, {
      ...summarize(times.get(name)!),
      results_per_query: Number((results.get(name)! / queries.length).toFixed(2)),
      violations: violations.get(name)!,
    }]));
    log(`${mode}: ${names.map((name) => `${name} ${(byMode[mode]![name] as { p50: number }).p50} ms`).join(', ')}`);
  }
  client.close();
  await writeResult(out, {
    benchmark: 'filtered-queries',
    date: new Date().toISOString(),
    database,
    machine: machineDescription(),
    data: { documents: documentCount, chunks: stats.chunks, load_seconds: loadSeconds === null ? null : Number(loadSeconds.toFixed(1)), documents_per_batch: DOCUMENTS_PER_BATCH },
    queries: { per_filter_and_mode: queries.length, top_k: 10, block: BLOCK, rounds: ROUNDS },
    metadata_range_indexes: { setting: process.env.METADATA_RANGE_INDEXES ?? 'default', ...rangeIndexes },
    filters: Object.fromEntries(names.map((name) => [name, filters[name]])),
    latency_ms: byMode,
  });
} finally {
  await service.stop();
  await rm(dataDir, { recursive: true, force: true });
}
