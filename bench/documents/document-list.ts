/**
 * The document list (`GET /v1/collections/{name}/documents`) with metadata filters, through the
 * public API on the built service: no filter; equality on one upload batch's value (50 documents),
 * on a value 10 % of documents carry; `$in` with three batches; a value no document carries; a range
 * 4 % fall in; the 10 % value sorted by filename. Documents are uploaded 50 a batch, each batch with
 * `{batch, source: one of 10, year: 2000 + batch % 25}` as its metadata. The cases take turns in
 * blocks (the first rotating), so the machine's drift falls on all of them alike. Default page
 * (50, newest first), one client. Every page is checked against its filter (`violations`, which
 * must be 0) and its total against the count the loading implies.
 *
 * Run: npm run build && npx tsx bench/documents/document-list.ts [documents=30000]
 * DATABASE_URL: PostgreSQL (that database is dropped and recreated, unless BENCH_REUSE=1 finds the
 * collection loaded by an earlier run); else the embedded database, in BENCH_DATA_DIR when given
 * (kept, and reused when an earlier run loaded it) or in a temporary directory.
 * Writes bench/results/document-list-<pglite|postgresql>.json (BENCH_OUT overrides).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { matchesFilter } from '../../src/search/filters/match-filter.js';
import { parseFilter } from '../../src/search/filters/parse-filter.js';
import { JsonClient, resetPostgresDatabase, startServiceAt, summarize, uploadCorpusBatch, waitForIngestion } from '../search/harness.js';
import { bootstrapAdmin, keyOfEarlierAdmin, machineDescription, writeResult } from '../support/service-process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const documentCount = Number(process.argv[2] ?? 30_000);
const databaseUrl = process.env.DATABASE_URL;
const keptDataDir = process.env.BENCH_DATA_DIR;
const reuse = databaseUrl ? process.env.BENCH_REUSE === '1' : keptDataDir !== undefined && existsSync(keptDataDir);
const database = databaseUrl ? 'postgresql' : 'pglite';
const out = process.env.BENCH_OUT ?? path.join(root, `bench/results/document-list-${database}.json`);
const COLLECTION = 'listing';
const DOCUMENTS_PER_BATCH = 50;
const UPLOADS_IN_FLIGHT = 4;
const ROUNDS = 6;
const BLOCK = 20;
const SOURCES = ['wiki', 'crm', 'drive', 'mail', 'tickets', 'slides', 'forum', 'code', 'legal', 'hr'];
const log = (message: string) => process.stderr.write(`[document-list] ${message}\n`);

const batchCount = Math.ceil(documentCount / DOCUMENTS_PER_BATCH);
const batchMetadata = (batch: number) => ({ batch, source: SOURCES[batch % SOURCES.length]!, year: 2000 + (batch % 25) });
const documentsOfBatch = (batch: number) => Math.min(DOCUMENTS_PER_BATCH, documentCount - batch * DOCUMENTS_PER_BATCH);
const countPassing = (filter: Record<string, unknown> | undefined) => {
  const parsed = filter && parseFilter(filter);
  let count = 0;
  for (let batch = 0; batch < batchCount; batch++) if (!parsed || matchesFilter(parsed, batchMetadata(batch))) count += documentsOfBatch(batch);
  return count;
};

const cases: Record<string, { filter?: Record<string, unknown>; sort?: string }> = {
  none: {},
  one_batch: { filter: { batch: 7 } },
  three_batches_in: { filter: { batch: { $in: [7, 8, 9] } } },
  source_10_percent: { filter: { source: 'crm' } },
  no_document: { filter: { batch: -1 } },
  year_range_4_percent: { filter: { year: { $gte: 2024 } } },
  source_10_percent_by_filename: { filter: { source: 'crm' }, sort: 'filename' },
};

function listPath(listCase: { filter?: Record<string, unknown>; sort?: string }): string {
  const query = new URLSearchParams();
  if (listCase.filter) query.set('filters', JSON.stringify(listCase.filter));
  if (listCase.sort) {
    query.set('sort', listCase.sort);
    query.set('order', 'asc');
  }
  const text = query.toString();
  return `/v1/collections/${COLLECTION}/documents${text ? `?${text}` : ''}`;
}

async function load(baseUrl: string, key: string, client: JsonClient): Promise<number> {
  await client.request('POST', '/v1/collections', { name: COLLECTION });
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: UPLOADS_IN_FLIGHT }, async () => {
    while (next < batchCount) {
      const batch = next++;
      await uploadCorpusBatch(baseUrl, key, COLLECTION, batch * DOCUMENTS_PER_BATCH, documentsOfBatch(batch), batchMetadata(batch));
    }
  }));
  await waitForIngestion(client, COLLECTION, 1000);
  return (performance.now() - started) / 1000;
}

if (databaseUrl && !reuse) await resetPostgresDatabase(databaseUrl);
const dataDir = keptDataDir ?? await mkdtemp(path.join(os.tmpdir(), 'rs-document-list-'));
await mkdir(dataDir, { recursive: true });
const service = await startServiceAt(dataDir, databaseUrl ? { DATABASE_URL: databaseUrl } : {});
try {
  const key = reuse ? await keyOfEarlierAdmin(service.baseUrl) : (await bootstrapAdmin(service.baseUrl)).key;
  const client = new JsonClient(service.baseUrl, key, 4);
  const loadSeconds = reuse ? null : await load(service.baseUrl, key, client);
  const stats = await waitForIngestion(client, COLLECTION, 1000);
  log(`${stats.chunks} chunks${loadSeconds === null ? ' (loaded by an earlier run)' : ` loaded in ${loadSeconds.toFixed(0)} s`}`);

  const names = Object.keys(cases);
  for (const name of names) for (let warm = 0; warm < BLOCK; warm++) await client.request('GET', listPath(cases[name]!));
  const times = new Map(names.map((name) => [name, [] as number[]]));
  const totals = new Map<string, number>();
  const violations = new Map(names.map((name) => [name, 0]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let turn = 0; turn < names.length; turn++) {
      const name = names[(round + turn) % names.length]!;
      const listCase = cases[name]!;
      const parsed = listCase.filter && parseFilter(listCase.filter);
      for (let request = 0; request < BLOCK; request++) {
        const answer = await client.request<{ data: Array<{ metadata: Record<string, unknown> }>; total: number }>('GET', listPath(listCase));
        times.get(name)!.push(answer.milliseconds);
        totals.set(name, answer.body.total);
        if (answer.body.total !== countPassing(listCase.filter)) throw new Error(`${name}: total ${answer.body.total}, expected ${countPassing(listCase.filter)}`);
        if (parsed) violations.set(name, violations.get(name)! + answer.body.data.filter((document) => !matchesFilter(parsed, document.metadata)).length);
      }
    }
  }
  const latency = Object.fromEntries(names.map((name) => [name, { ...summarize(times.get(name)!), total: totals.get(name), violations: violations.get(name) }]));
  log(names.map((name) => `${name} ${latency[name]!.p50} ms`).join(', '));
  client.close();
  await writeResult(out, {
    benchmark: 'document-list',
    date: new Date().toISOString(),
    database,
    machine: machineDescription(),
    data: { documents: documentCount, chunks: stats.chunks, load_seconds: loadSeconds === null ? null : Number(loadSeconds.toFixed(1)), documents_per_batch: DOCUMENTS_PER_BATCH },
    requests: { per_case: ROUNDS * BLOCK, block: BLOCK, rounds: ROUNDS, page: 50 },
    cases,
    latency_ms: latency,
  });
} finally {
  await service.stop();
  if (!keptDataDir) await rm(dataDir, { recursive: true, force: true });
}
