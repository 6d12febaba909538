/**
 * Search benchmark through the public API, on one data set in one run:
 *
 * 1. Ingestion: 5,000 ~2 KB English-like .txt documents (bench/search/corpus.ts) uploaded with
 *    multipart POST /v1/collections/bench/documents, 16 in flight, into a collection with the
 *    default chunking (800 / 100); timed from the first upload until GET .../stats shows every
 *    document ready. Reports documents/s and chunks/s (chunks from the stats).
 * 2. Query latency per mode (semantic, keyword, hybrid; top_k 10; skip_cache) at each scale of
 *    BENCH_SCALES (chunk counts, default 10000,100000; the same collection is grown by uploading
 *    more documents): one client (sequential) and 16 concurrent clients (req/s too), with the
 *    per-stage timings the responses carry.
 * 3. At each scale, the same queries (a) on LanceDB in this process (same texts and vectors, HNSW_SQ
 *    + FTS, RRF k 60) and (b) "direct": the service's own query path and SQL without HTTP
 *    (bench/search/direct.ts), after stopping the service (PGlite allows one process); service
 *    overhead = service p50 / direct p50; and (c) the HTTP floor (bench/search/http-floor.ts): a bare
 *    Fastify process answering with the service's own responses, which splits service - direct into
 *    what any Node HTTP server costs and what the service adds; and (d) service and direct at once,
 *    in alternating blocks (bench/search/interleaved.ts, direct on a copy of the data), the overhead
 *    the target is judged on: the separate phases run minutes apart, and machine drift between them
 *    moved their ratio by up to 0.7x. Direct also runs once more idling before each query as long
 *    as a request spends outside the query code, which shows what idle gaps alone cost the same code.
 *
 * LanceDB is not a project dependency (its optional dependencies pull in model runtimes whose install
 * scripts download binaries), so install it for the run first:
 *   npm i --no-save @lancedb/lancedb@0.37.1 apache-arrow@18.1.0
 * (type-check this folder then with `npx tsc -p bench/search/tsconfig.json --noEmit`).
 * Run: npm run build && npx tsx bench/search/search-bench.ts
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/rs_bench_search  PostgreSQL (that database is dropped and recreated)
 *   BENCH_SCALES=10000,100000          chunk counts to measure queries at
 *   BENCH_SEQUENTIAL_QUERIES=300       queries per mode, one client (also direct and LanceDB)
 *   BENCH_WARMUP_QUERIES=300           untimed queries before each of those runs (JIT and caches settle;
 *                                      with 30, p50 of the service was up to 40 % above its steady state)
 *   BENCH_INTERLEAVED_QUERIES=1000     queries per mode on each side in (d), after the warm-up on each side
 *   BENCH_INTERLEAVED_ROUNDS=20        rounds of (service block, direct block) they are split into
 *   BENCH_CONCURRENT_SECONDS=10        seconds per mode with 16 clients
 *   BENCH_INGEST_DOCUMENTS=5000        documents in the timed ingestion
 *   BENCH_UPLOAD_BATCH=50              files per upload request: more than 1 uses POST .../documents/batch
 *                                      (4 in flight), as a bulk loader would; 1 uses POST .../documents (16 in flight)
 *   BENCH_QUIET_BUDGET_S=900           before each timed phase, wait (at most 300 s, at most this in total) until
 *                                      other processes use < 0.3 cores: the machine is shared
 *   BENCH_CPU_PROF_DIR=/tmp/profiles   run every service process with --cpu-prof into this folder, and
 *                                      restart it before each query phase so query and ingestion
 *                                      profiles are separate (figures then include profiler overhead)
 * Writes bench/results/search-<pglite|postgresql>.json (BENCH_OUT overrides).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';
import { parsePlainText } from '../../plugins/parser/text/index.js';
import { chunkElements } from '../../src/chunking/chunk-elements.js';
import type { Config } from '../../src/config.js';
import { openDatabase, vectorSearchSessionSettings, type Database } from '../../src/db/database.js';
import { Collection, type CollectionRecord } from '../../src/db/entities/index.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import type { SqlRunner } from '../../src/plugins.js';
import type { QueryRuntime, QueryTimings } from '../../src/search/collection-query.js';
import type { SearchIndexes } from '../../src/search/search-indexes.js';
import { bootstrapAdmin, graphsSettled, machineDescription } from '../support/service-process.js';
import { benchmarkQueries, documentText, topicOfDocument, VOCABULARY_SIZE, TOPIC_COUNT } from './corpus.js';
import {
  directRuntime, loadIndexes, openRawPglite, pgliteSqlRunner, pgSqlRunner, runDirect, serviceConfig, serviceIndexes, type DirectRun,
} from './direct.js';
import {
  CpuMonitor, JsonClient, medianOfFields, resetPostgresDatabase, roundTo, startServiceAt, summarize, uploadCorpusBatch, waitForQuiet,
  type CpuUse, type LatencySummary, type RunningService,
} from './harness.js';
import { startHttpFloor } from './http-floor.js';
import { interleavedComparison, type InterleavedResult, type InterleavedSides } from './interleaved.js';
import { benchmarkLance, type ChunkRows, type LanceResult } from './lance.js';

const MODES = ['semantic', 'keyword', 'hybrid'] as const;
type Mode = (typeof MODES)[number];
/** A record of `value(mode)` for each search mode. */
const byMode = <T>(value: (mode: Mode) => T) => Object.fromEntries(MODES.map((mode) => [mode, value(mode)])) as Record<Mode, T>;

const databaseUrl = process.env.DATABASE_URL || undefined;
const database = databaseUrl ? 'postgresql' : 'pglite';
const scales = (process.env.BENCH_SCALES ?? '10000,100000').split(',').map(Number).filter((value) => value > 0).sort((a, b) => a - b);
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL_QUERIES ?? 300);
const WARMUP = Number(process.env.BENCH_WARMUP_QUERIES ?? 300);
const INTERLEAVED_ROUNDS = Number(process.env.BENCH_INTERLEAVED_ROUNDS ?? 20);
const INTERLEAVED_QUERIES = Number(process.env.BENCH_INTERLEAVED_QUERIES ?? 1000);
const CONCURRENT_CLIENTS = 16;
const CONCURRENT_SECONDS = Number(process.env.BENCH_CONCURRENT_SECONDS ?? 10);
const INGEST_DOCUMENTS = Number(process.env.BENCH_INGEST_DOCUMENTS ?? 5000);
const UPLOADS_IN_FLIGHT = 16;
const UPLOAD_BATCH = Number(process.env.BENCH_UPLOAD_BATCH ?? 50);
const BATCHES_IN_FLIGHT = 4;
const PROFILE_DIR = process.env.BENCH_CPU_PROF_DIR || undefined;
let quietBudgetSeconds = Number(process.env.BENCH_QUIET_BUDGET_S ?? 900);
const OUT = process.env.BENCH_OUT ?? `bench/results/search-${database}.json`;
const COLLECTION = 'bench';
const CHUNK_SIZE = 800;
const CHUNK_OVERLAP = 100;

const TARGETS = {
  ingestion_chunks_per_s_embedded: 1000,
  hybrid_p50_ms_at_100k_embedded: 15,
  service_overhead_ratio_max: 1.5,
};

const log = (message: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const queries = benchmarkQueries(500);
const startedAt = new Date();

// ---------- corpus planning: the service's own chunker predicts each document's chunk count ----------

const chunkCountCache: number[] = [];
function chunksOfDocument(index: number): number {
  chunkCountCache[index] ??= chunkElements(parsePlainText(documentText(index)).elements, { chunkSize: CHUNK_SIZE, chunkOverlap: CHUNK_OVERLAP, strategy: 'recursive' }).length;
  return chunkCountCache[index]!;
}

// ---------- service lifecycle ----------

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-bench-search-'));
let service: RunningService | undefined;
let processNumber = 0;

async function start(label: string): Promise<RunningService> {
  processNumber += 1;
  const nodeArgs = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.join(PROFILE_DIR, `${database}-${processNumber}-${label}`)}`] : [];
  service = await startServiceAt(dataDir, databaseUrl ? { DATABASE_URL: databaseUrl } : {}, nodeArgs);
  return service;
}

async function stop(): Promise<void> {
  await service?.stop();
  service = undefined;
}

/** The benchmark, the service, and (PostgreSQL) the server backends serving our database. */
function ownPids(): number[] {
  const pids = [process.pid];
  if (service?.child.pid) pids.push(service.child.pid);
  if (databaseUrl) {
    const name = new URL(databaseUrl).pathname.slice(1);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
        if (command.startsWith('postgres:') && command.includes(` ${name} `)) pids.push(Number(entry));
      } catch {
        // gone meanwhile
      }
    }
  }
  return pids;
}

/** Waits for a quiet machine before a timed phase (bounded by BENCH_QUIET_BUDGET_S in total). */
async function quiet(): Promise<{ waited_s: number; foreign_cores: number }> {
  const result = await waitForQuiet(ownPids, 0.3, Math.max(0, Math.min(300, quietBudgetSeconds)), log);
  quietBudgetSeconds -= result.waited_s;
  return result;
}

async function measured<T extends object>(work: () => Promise<T>): Promise<T & { quiet: { waited_s: number; foreign_cores: number }; cpu: CpuUse }> {
  const before = await quiet();
  const monitor = new CpuMonitor(ownPids);
  const result = await work();
  return { ...result, quiet: before, cpu: monitor.end() };
}

function serviceRssMib(): number | null {
  try {
    const status = readFileSync(`/proc/${service?.child.pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

// ---------- uploads and ingestion ----------

interface Stats {
  documents: number;
  chunks: number;
  documents_by_status: Record<string, number>;
}

let nextDocument = 0;

/** One document; returns 1 when it was a duplicate of a stored one (answered 200, nothing new stored). */
async function uploadDocument(baseUrl: string, key: string, index: number): Promise<number> {
  const form = new FormData();
  form.append('metadata', JSON.stringify({ doc: index, topic: topicOfDocument(index) }));
  form.append('file', new Blob([documentText(index)], { type: 'text/plain' }), `doc-${String(index).padStart(6, '0')}.txt`);
  const response = await fetch(`${baseUrl}/v1/collections/${COLLECTION}/documents`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  if (response.status !== 202 && response.status !== 200) throw new Error(`upload ${index}: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
  return response.status === 200 ? 1 : 0;
}

async function stats(client: JsonClient): Promise<Stats> {
  return (await client.request<Stats>('GET', `/v1/collections/${COLLECTION}/stats`)).body;
}

interface IngestionRun {
  documents: number;
  chunks: number;
  collection_chunks_before: number;
  collection_chunks_after: number;
  upload_seconds: number;
  seconds: number;
  documents_per_s: number;
  chunks_per_s: number;
  uploads_per_s: number;
  /** Uploads whose text an earlier document already had: answered with that document, nothing new stored. */
  duplicates_skipped: number;
  stats_polls: number;
  cpu?: CpuUse;
}

/** Uploads documents [nextDocument, nextDocument + count) with 16 in flight; waits until all are ready. */
async function ingest(client: JsonClient, baseUrl: string, key: string, count: number): Promise<IngestionRun> {
  const before = await stats(client);
  const first = nextDocument;
  const last = first + count;
  nextDocument = last;
  let cursor = first;
  let duplicates = 0;
  const started = performance.now();
  if (UPLOAD_BATCH > 1) {
    await Promise.all(Array.from({ length: BATCHES_IN_FLIGHT }, async () => {
      while (cursor < last) {
        const start = cursor;
        cursor = Math.min(last, cursor + UPLOAD_BATCH);
        duplicates += await uploadCorpusBatch(baseUrl, key, COLLECTION, start, cursor - start, { batch_first_doc: start });
      }
    }));
  } else {
    await Promise.all(Array.from({ length: UPLOADS_IN_FLIGHT }, async () => {
      while (cursor < last) duplicates += await uploadDocument(baseUrl, key, cursor++);
    }));
  }
  const uploadSeconds = (performance.now() - started) / 1000;
  let polls = 0;
  let after: Stats;
  for (;;) {
    after = await stats(client);
    polls += 1;
    const waiting = (after.documents_by_status.pending ?? 0) + (after.documents_by_status.processing ?? 0);
    if ((after.documents_by_status.failed ?? 0) > 0) throw new Error(`${after.documents_by_status.failed} documents failed`);
    if (waiting === 0 && after.documents - before.documents >= count - duplicates) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const seconds = (performance.now() - started) / 1000;
  const chunks = after.chunks - before.chunks;
  return {
    documents: count, chunks,
    collection_chunks_before: before.chunks, collection_chunks_after: after.chunks,
    upload_seconds: roundTo(uploadSeconds), seconds: roundTo(seconds),
    documents_per_s: Math.round(count / seconds), chunks_per_s: Math.round(chunks / seconds),
    uploads_per_s: Math.round(count / uploadSeconds), duplicates_skipped: duplicates, stats_polls: polls,
  };
}

/** How many more documents bring the collection from `current` to at least `target` chunks. */
function documentsToReach(current: number, target: number): number {
  let chunks = current;
  let count = 0;
  while (chunks < target) chunks += chunksOfDocument(nextDocument + count++);
  return count;
}

// ---------- queries over HTTP ----------

interface SequentialRun {
  latency: LatencySummary;
  /** The last response, for the HTTP floor server to answer with. */
  last_body: unknown;
  /** p50 of each stage the response reports (ms). */
  stage_p50: Record<string, number>;
  result_ids: string[][];
  mean_results: number;
}

const queryBody = (index: number, mode: Mode) => ({
  query: queries[((index % queries.length) + queries.length) % queries.length]!, search_mode: mode, top_k: 10, skip_cache: true,
});
const queryPath = `/v1/collections/${COLLECTION}/query`;

interface QueryAnswer {
  results: Array<{ id: string }>;
  timings: QueryTimings;
}

async function sequentialQueries(client: JsonClient, mode: Mode): Promise<SequentialRun> {
  const latencies: number[] = [];
  const timings: QueryTimings[] = [];
  const ids: string[][] = [];
  let lastBody: unknown = null;
  for (let index = -WARMUP; index < SEQUENTIAL; index++) {
    const response = await client.request<QueryAnswer>('POST', queryPath, queryBody(index, mode));
    lastBody = response.body;
    if (index < 0) continue;
    latencies.push(response.milliseconds);
    timings.push(response.body.timings);
    ids.push(response.body.results.map((result) => result.id));
  }
  return {
    latency: summarize(latencies),
    last_body: lastBody,
    stage_p50: medianOfFields(timings),
    result_ids: ids,
    mean_results: roundTo(ids.reduce((sum, list) => sum + list.length, 0) / Math.max(1, ids.length)),
  };
}

interface ConcurrentRun {
  clients: number;
  seconds: number;
  requests: number;
  requests_per_s: number;
  latency: LatencySummary;
  stage_p50: Record<string, number>;
}

async function concurrentQueries(client: JsonClient, mode: Mode, seconds: number): Promise<ConcurrentRun> {
  let next = 0;
  const latencies: number[] = [];
  const timings: QueryTimings[] = [];
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(Array.from({ length: CONCURRENT_CLIENTS }, async () => {
    while (performance.now() < deadline) {
      const response = await client.request<QueryAnswer>('POST', queryPath, queryBody(next++, mode));
      latencies.push(response.milliseconds);
      timings.push(response.body.timings);
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  return {
    clients: CONCURRENT_CLIENTS, seconds: roundTo(elapsed), requests: latencies.length,
    requests_per_s: Math.round(latencies.length / elapsed),
    latency: summarize(latencies),
    stage_p50: medianOfFields(timings),
  };
}

// ---------- direct (no HTTP) ----------

interface DirectModeResult {
  latency: LatencySummary;
  stage_p50: Record<string, number>;
}

function directSummary(run: DirectRun): DirectModeResult {
  return { latency: summarize(run.latencies), stage_p50: medianOfFields(run.timings) };
}

async function readChunkRows(sql: SqlRunner, collectionId: string): Promise<ChunkRows> {
  const rows: ChunkRows = { keys: [], ids: [], texts: [] };
  let afterKey = 0;
  for (;;) {
    const page = await sql<{ key: number | string; id: string; text: string }>(
      'select key, id, text from chunks where collection_id = ?::uuid and key > ? order by key limit 10000', [collectionId, afterKey],
    );
    for (const row of page) {
      rows.keys.push(Number(row.key));
      rows.ids.push(row.id);
      rows.texts.push(row.text);
    }
    if (page.length < 10000) return rows;
    afterKey = Number(page[page.length - 1]!.key);
  }
}

/** Mean share of a's top-10 ids that b also returns, query by query. */
function agreement(a: string[][], b: string[][]): number {
  let total = 0;
  const count = Math.min(a.length, b.length);
  for (let index = 0; index < count; index++) {
    const other = new Set(b[index]);
    const own = a[index]!;
    total += own.length === 0 ? (b[index]!.length === 0 ? 1 : 0) : own.filter((id) => other.has(id)).length / own.length;
  }
  return roundTo(total / Math.max(1, count), 3);
}

interface DirectPhase {
  /** Loading both indexes from the database, as the first query after a service start does. */
  index_load: { vector_store_s: number; keyword_index_s: number };
  service_runner: Record<Mode, DirectModeResult>;
  /**
   * The service runner again, idling before each query as long as a request spends outside
   * queryCollection (service p50 - its total_ms p50): the same code at the service's pace.
   */
  service_runner_paced: Record<Mode, DirectModeResult & { idle_ms: number }>;
  raw_driver: Record<Mode, DirectModeResult>;
  agreement_with_service: Record<Mode, number>;
  rows: ChunkRows;
  semanticIds: string[][];
}

interface DirectSide {
  config: Config;
  db: Database;
  sql: SqlRunner;
  collection: CollectionRecord;
  indexes: SearchIndexes;
  /** Loading both indexes from the database, as the first query after a service start does. */
  indexLoad: { vector_store_s: number; keyword_index_s: number };
  runtime: QueryRuntime;
}

/**
 * The service's query path opened in this process on the service's data: the embedded database
 * and saved graphs under `root`, or (no root) the PostgreSQL database.
 */
async function openDirectSide(root: string | undefined): Promise<DirectSide> {
  const config = serviceConfig(databaseUrl);
  const db = await openDatabase({ databaseUrl, dataDir: root ? path.join(root, 'db') : undefined });
  try {
    const sql = createSqlRunner(db);
    const collection = await db.fork().findOneOrFail(Collection, { name: COLLECTION });
    const indexes = serviceIndexes(config, sql, root ? path.join(root, 'vector-store') : undefined);
    const indexLoad = await loadIndexes(indexes, collection);
    return { config, db, sql, collection, indexes, indexLoad, runtime: directRuntime(config, sql, indexes) };
  } catch (error) {
    await db.close();
    throw error;
  }
}

async function directPhase(serviceIds: Record<Mode, string[][]>, idleMs: Record<Mode, number>): Promise<DirectPhase> {
  const { config, db, sql, collection, indexes, indexLoad, runtime } = await openDirectSide(databaseUrl ? undefined : dataDir);
  const closers: Array<() => Promise<void>> = [];
  try {
    log(`  direct: index load ${JSON.stringify(indexLoad)}`);
    const serviceRunner = {} as Record<Mode, DirectModeResult>;
    const agreementWithService = {} as Record<Mode, number>;
    let semanticIds: string[][] = [];
    for (const mode of MODES) {
      const run = await runDirect(runtime, collection, queries, mode, SEQUENTIAL, WARMUP);
      serviceRunner[mode] = directSummary(run);
      agreementWithService[mode] = agreement(serviceIds[mode], run.resultIds);
      if (mode === 'semantic') semanticIds = run.resultIds;
    }
    const serviceRunnerPaced = {} as Record<Mode, DirectModeResult & { idle_ms: number }>;
    for (const mode of MODES) {
      serviceRunnerPaced[mode] = { idle_ms: idleMs[mode], ...directSummary(await runDirect(runtime, collection, queries, mode, SEQUENTIAL, WARMUP, idleMs[mode])) };
    }
    const rows = await readChunkRows(sql, collection.id);

    // The same statements through the raw driver.
    let rawSql: SqlRunner;
    let rawIndexes: SearchIndexes;
    if (databaseUrl) {
      // The service's per-connection pgvector settings (src/db/database.ts), so both run the same plans.
      const sessionOptions = Object.entries(vectorSearchSessionSettings).map(([name, value]) => `-c ${name}=${value}`).join(' ');
      const pool = new pg.Pool({ connectionString: databaseUrl, max: 10, options: sessionOptions });
      closers.push(() => pool.end());
      rawSql = pgSqlRunner(pool);
      rawIndexes = serviceIndexes(config, rawSql);
      await indexes.keywordIndex.close();
      await indexes.vectorStore.close();
      await db.close();
    } else {
      // PGlite allows one instance per directory: close the ORM's, open a raw one. The in-memory
      // indexes stay as loaded (searching them issues no SQL); only the chunk fetch uses rawSql.
      await db.close();
      const pglite = await openRawPglite(path.join(dataDir, 'db'));
      closers.push(async () => {
        await indexes.keywordIndex.close();
        await indexes.vectorStore.close();
        await pglite.close();
      });
      rawSql = pgliteSqlRunner(pglite);
      rawIndexes = indexes;
    }
    const rawRuntime = directRuntime(config, rawSql, rawIndexes);
    const rawDriver = {} as Record<Mode, DirectModeResult>;
    for (const mode of MODES) rawDriver[mode] = directSummary(await runDirect(rawRuntime, collection, queries, mode, SEQUENTIAL, WARMUP));
    return { index_load: indexLoad, service_runner: serviceRunner, service_runner_paced: serviceRunnerPaced, raw_driver: rawDriver, agreement_with_service: agreementWithService, rows, semanticIds };
  } finally {
    for (const close of closers) await close();
    // Closing twice is harmless (the PostgreSQL branch closed it already).
    await db.close().catch(() => undefined);
  }
}

// ---------- service and direct at once, in alternating blocks (bench/search/interleaved.ts) ----------

interface InterleavedSetup {
  sides: InterleavedSides;
  /** Seconds the direct side took to load its indexes (from the copied snapshot: no graph build). */
  directIndexLoad: { vector_store_s: number; keyword_index_s: number };
  close(): Promise<void>;
}

/** Restarts the service and opens direct beside it (on a copy of the embedded database's files). */
async function openInterleaved(key: string, cookie: string): Promise<InterleavedSetup> {
  // The embedded database allows one process per directory: direct opens a copy taken while the
  // service is stopped, graph snapshot included.
  const copyDir = databaseUrl ? undefined : path.join(dataDir, 'direct-copy');
  if (copyDir) {
    await rm(copyDir, { recursive: true, force: true });
    await cp(path.join(dataDir, 'db'), path.join(copyDir, 'db'), { recursive: true });
    await cp(path.join(dataDir, 'vector-store'), path.join(copyDir, 'vector-store'), { recursive: true });
  }
  await start('interleaved');
  const client = new JsonClient(service!.baseUrl, key);
  let direct: DirectSide | undefined;
  const close = async () => {
    client.close();
    await direct?.indexes.keywordIndex.close();
    await direct?.indexes.vectorStore.close();
    await direct?.db.close();
    await stop();
    if (copyDir) await rm(copyDir, { recursive: true, force: true });
  };
  try {
    await client.request('POST', queryPath, queryBody(0, 'hybrid'));
    if (!databaseUrl) await graphsSettled(service!.baseUrl, cookie);
    direct = await openDirectSide(copyDir);
    return { sides: { client, queryPath, runtime: direct.runtime, collection: direct.collection, queries }, directIndexLoad: direct.indexLoad, close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function interleavedPhase(sides: InterleavedSides): Promise<Record<Mode, InterleavedResult>> {
  const result = {} as Record<Mode, InterleavedResult>;
  for (const mode of MODES) {
    result[mode] = await interleavedComparison(sides, mode, INTERLEAVED_ROUNDS, Math.max(1, Math.round(INTERLEAVED_QUERIES / INTERLEAVED_ROUNDS)), WARMUP);
    log(`  interleaved ${mode}: service p50 ${result[mode].service.p50} ms, direct p50 ${result[mode].direct.p50} ms, ratio ${result[mode].ratio} (by round ${result[mode].ratio_by_round.join(' ')})`);
    log(`    query code p50 ms, service ${JSON.stringify(result[mode].query_code_ms.service)}, direct ${JSON.stringify(result[mode].query_code_ms.direct)}`);
  }
  return result;
}

// ---------- the run ----------

function gitState() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const modified = execFileSync('git', ['status', '--short', 'src', 'plugins'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
    return { head, modified_src_and_plugins: modified };
  } catch {
    return null;
  }
}

interface ScaleResult {
  target_chunks: number;
  chunks: number;
  documents: number;
  growth: IngestionRun | null;
  /** Seconds from the end of growth until the embedded graph held every row (queries wait for it); null on PostgreSQL. */
  graph_settle_wait_s: number | null;
  service_rss_mib_after_queries: number | null;
  service: {
    sequential: Record<Mode, Omit<SequentialRun, 'result_ids' | 'last_body'>>;
    concurrent: Record<Mode, ConcurrentRun>;
  };
  direct: Omit<DirectPhase, 'rows' | 'semanticIds'>;
  lancedb: Omit<LanceResult, 'result_ids' | 'recall'> & { agreement_with_service: Record<Mode, number> };
  /** Share of the exact cosine top 10 (ties counted) that each ANN path returns (same 300 queries). */
  semantic_recall_at_10: { service_semantic: number; direct_semantic: number; lancedb_semantic: number };
  /** One client against bench/search/http-floor.ts answering with the service's responses. */
  http_floor: Record<Mode, LatencySummary>;
  overhead_breakdown: Record<Mode, OverheadBreakdown>;
  /** Service and direct running at once, alternating blocks: the ratio the target is judged on. */
  interleaved: Record<Mode, InterleavedResult> & { quiet: { waited_s: number; foreign_cores: number }; cpu: CpuUse };
  /** How long direct took to load its indexes for the interleaved phase (from the copied snapshot: no graph build). */
  interleaved_direct_index_load: { vector_store_s: number; keyword_index_s: number };
  overhead_interleaved: Record<Mode, number>;
  /** Service p50 of the sequential phase over direct p50 of the direct phase, minutes apart. */
  overhead_vs_direct_service_runner: Record<Mode, number>;
  /** Service p50 over direct p50 when direct idles between queries as the service does (diagnostic). */
  overhead_vs_direct_paced: Record<Mode, number>;
  overhead_vs_direct_raw_driver: Record<Mode, number>;
}

interface OverheadBreakdown {
  /** Service p50 - direct p50. */
  added_ms: number;
  /** p50 of the bare Fastify process answering the same responses: HTTP, Fastify and the client. */
  http_floor_ms: number;
  /** added_ms - http_floor_ms: authentication, hooks, validation, the collection lookup, and the same work run slower between requests than in a loop. */
  service_own_ms: number;
  /** (direct p50 + floor p50) / direct p50: the ratio of a service that added nothing but the floor. */
  ratio_with_floor_only: number;
}

// The tree as built for this run: others commit while it runs.
const gitAtStart = gitState();
if (databaseUrl) {
  log(`resetting PostgreSQL database ${new URL(databaseUrl).pathname.slice(1)}`);
  await resetPostgresDatabase(databaseUrl);
}
const model = localEmbeddingPlugin.create({}, {});
const results: ScaleResult[] = [];
const growthRuns: Array<IngestionRun & { phase: string }> = [];
let ingestion: IngestionRun | null = null;
// The timed ingestion starts on an empty collection when the first scale holds at least as many
// chunks as it adds, else right after the first scale is measured.
let plannedIngestChunks = 0;
for (let index = 0; index < INGEST_DOCUMENTS; index++) plannedIngestChunks += chunksOfDocument(index);
const ingestFirst = scales.length === 0 || scales[0]! >= plannedIngestChunks;

try {
  await start('setup');
  const { key, cookie } = await bootstrapAdmin(service!.baseUrl);
  let client = new JsonClient(service!.baseUrl, key);
  await client.request('POST', '/v1/collections', { name: COLLECTION, chunk_size: CHUNK_SIZE, chunk_overlap: CHUNK_OVERLAP });

  const timedIngestion = async () => {
    log(`timed ingestion: ${INGEST_DOCUMENTS} documents, ${UPLOAD_BATCH > 1 ? `batches of ${UPLOAD_BATCH}, ${BATCHES_IN_FLIGHT}` : UPLOADS_IN_FLIGHT} uploads in flight`);
    ingestion = await measured(() => ingest(client, service!.baseUrl, key, INGEST_DOCUMENTS));
    log(`  ${ingestion.documents_per_s} documents/s, ${ingestion.chunks_per_s} chunks/s (${ingestion.chunks} chunks in ${ingestion.seconds} s; uploads done after ${ingestion.upload_seconds} s)`);
  };
  if (ingestFirst) await timedIngestion();

  for (const [scaleIndex, target] of scales.entries()) {
    if (!service) {
      await start(`grow-${target}`);
      client = new JsonClient(service!.baseUrl, key);
      // Loads the in-memory indexes (embedded database) before anything is timed.
      await client.request('POST', queryPath, queryBody(0, 'hybrid'));
      if (scaleIndex > 0 && !ingestion) await timedIngestion();
    }
    const current = (await stats(client)).chunks;
    let growth: IngestionRun | null = null;
    const more = documentsToReach(current, target);
    if (more > 0) {
      log(`growing to ${target} chunks: ${more} more documents`);
      const monitor = new CpuMonitor(ownPids);
      growth = { ...(await ingest(client, service!.baseUrl, key, more)), cpu: monitor.end() };
      growthRuns.push({ phase: `to ${target}`, ...growth });
      log(`  ${growth.documents_per_s} documents/s, ${growth.chunks_per_s} chunks/s`);
    }
    if (PROFILE_DIR) {
      await stop();
      await start(`queries-${target}`);
      client = new JsonClient(service!.baseUrl, key);
      await client.request('POST', queryPath, queryBody(0, 'hybrid'));
    }
    const scaleStats = await stats(client);
    log(`scale ${target}: ${scaleStats.chunks} chunks, ${scaleStats.documents} documents`);
    const graphSettleWait = databaseUrl ? null : await graphsSettled(service!.baseUrl, cookie);
    if (graphSettleWait !== null) log(`  the graph held every row ${graphSettleWait} s later`);

    const sequential = {} as Record<Mode, SequentialRun>;
    for (const mode of MODES) {
      sequential[mode] = await measured(() => sequentialQueries(client, mode));
      log(`  service ${mode} 1 client: p50 ${sequential[mode].latency.p50} p95 ${sequential[mode].latency.p95} p99 ${sequential[mode].latency.p99} ms  stages ${JSON.stringify(sequential[mode].stage_p50)}`);
    }
    const concurrent = {} as Record<Mode, ConcurrentRun>;
    for (const mode of MODES) {
      await concurrentQueries(client, mode, 1);
      concurrent[mode] = await measured(() => concurrentQueries(client, mode, CONCURRENT_SECONDS));
      log(`  service ${mode} ${CONCURRENT_CLIENTS} clients: ${concurrent[mode].requests_per_s} req/s, p50 ${concurrent[mode].latency.p50} p95 ${concurrent[mode].latency.p95} p99 ${concurrent[mode].latency.p99} ms`);
    }
    const rss = serviceRssMib();
    client.close();
    await stop();

    log(`  interleaved: service and direct at once, ${INTERLEAVED_ROUNDS} rounds of alternating blocks`);
    // The service runs during the whole measurement, so the CPU monitor counts it as ours.
    const interleavedSetup = await openInterleaved(key, cookie);
    let interleaved: Awaited<ReturnType<typeof measured<Record<Mode, InterleavedResult>>>>;
    try {
      interleaved = await measured(() => interleavedPhase(interleavedSetup.sides));
    } finally {
      await interleavedSetup.close();
    }

    log('  direct (no HTTP), service stopped');
    const idleMs = byMode((mode) => roundTo(Math.max(0, sequential[mode].latency.p50 - (sequential[mode].stage_p50.total_ms ?? 0))));
    const direct = await measured(() => directPhase(byMode((mode) => sequential[mode].result_ids), idleMs));
    for (const mode of MODES) {
      log(`  direct ${mode}: service SqlRunner p50 ${direct.service_runner[mode].latency.p50} ms (idling ${idleMs[mode]} ms before each: ${direct.service_runner_paced[mode].latency.p50} ms), raw driver p50 ${direct.raw_driver[mode].latency.p50} ms; top-10 agreement with service ${direct.agreement_with_service[mode]}`);
    }
    const { rows, semanticIds: directSemanticIds, ...directResult } = direct;

    const floorServer = await startHttpFloor(Object.fromEntries(MODES.map((mode) => [mode, sequential[mode].last_body])), dataDir);
    const floorClient = new JsonClient(floorServer.baseUrl, 'none');
    const httpFloor = {} as Record<Mode, LatencySummary>;
    try {
      for (const mode of MODES) httpFloor[mode] = (await measured(() => sequentialQueries(floorClient, mode))).latency;
    } finally {
      floorClient.close();
      await floorServer.stop();
    }
    const overheadBreakdown = Object.fromEntries(MODES.map((mode) => {
      const added = sequential[mode].latency.p50 - direct.service_runner[mode].latency.p50;
      return [mode, {
        added_ms: roundTo(added), http_floor_ms: httpFloor[mode].p50, service_own_ms: roundTo(added - httpFloor[mode].p50),
        ratio_with_floor_only: roundTo((direct.service_runner[mode].latency.p50 + httpFloor[mode].p50) / direct.service_runner[mode].latency.p50),
      }];
    })) as Record<Mode, OverheadBreakdown>;
    log(`  HTTP floor p50 (bare Fastify, same responses): ${MODES.map((mode) => `${mode} ${httpFloor[mode].p50}`).join(', ')} ms; ratio with the floor alone: ${MODES.map((mode) => overheadBreakdown[mode].ratio_with_floor_only).join(' / ')}`);

    log(`  LanceDB: ${rows.keys.length} rows`);
    const lance = await measured(() => benchmarkLance(rows, model, queries, SEQUENTIAL, WARMUP));
    const { result_ids: lanceIds, recall: recallOf, ...lanceResult } = lance;
    const recall = {
      service_semantic: recallOf(sequential.semantic.result_ids),
      direct_semantic: recallOf(directSemanticIds),
      lancedb_semantic: recallOf(lanceIds.semantic),
    };
    log(`  semantic recall@10 against exact cosine: ${JSON.stringify(recall)}`);
    log(`  LanceDB p50: semantic ${lance.semantic.p50}, keyword ${lance.keyword.p50}, hybrid ${lance.hybrid.p50}, hybrid depth 50 ${lance.hybrid_depth_50.p50} ms (index ${lance.vector_index_build_s} s + FTS ${lance.fts_index_build_s} s)`);

    const ratio = (runner: Record<Mode, DirectModeResult>) =>
      byMode((mode) => roundTo(sequential[mode].latency.p50 / runner[mode].latency.p50));
    results.push({
      target_chunks: target,
      chunks: scaleStats.chunks,
      documents: scaleStats.documents,
      growth,
      graph_settle_wait_s: graphSettleWait,
      service_rss_mib_after_queries: rss,
      service: {
        sequential: Object.fromEntries(MODES.map((mode) => {
          const { result_ids: _ids, last_body: _body, ...rest } = sequential[mode];
          return [mode, rest];
        })) as Record<Mode, Omit<SequentialRun, 'result_ids' | 'last_body'>>,
        concurrent,
      },
      direct: directResult,
      lancedb: {
        ...lanceResult,
        agreement_with_service: byMode((mode) => agreement(sequential[mode].result_ids, lanceIds[mode])),
      },
      semantic_recall_at_10: recall,
      http_floor: httpFloor,
      overhead_breakdown: overheadBreakdown,
      interleaved,
      interleaved_direct_index_load: interleavedSetup.directIndexLoad,
      overhead_interleaved: byMode((mode) => interleaved[mode].ratio),
      overhead_vs_direct_service_runner: ratio(direct.service_runner),
      overhead_vs_direct_paced: ratio(direct.service_runner_paced),
      overhead_vs_direct_raw_driver: ratio(direct.raw_driver),
    });
  }
  if (!ingestion) {
    await start('ingest');
    client = new JsonClient(service!.baseUrl, key);
    await client.request('POST', queryPath, queryBody(0, 'hybrid'));
    await timedIngestion();
    client.close();
  }
} finally {
  await stop();
  await rm(dataDir, { recursive: true, force: true });
}

// ---------- report ----------

const largest = results[results.length - 1];
const at100k = results.find((result) => result.target_chunks === 100_000);
const finalIngestion = ingestion as IngestionRun | null;
const targetsMet = {
  ingestion_chunks_per_s: finalIngestion ? { value: finalIngestion.chunks_per_s, target: TARGETS.ingestion_chunks_per_s_embedded, applies: database === 'pglite', met: finalIngestion.chunks_per_s >= TARGETS.ingestion_chunks_per_s_embedded } : null,
  hybrid_p50_at_100k: at100k ? { value: at100k.service.sequential.hybrid.latency.p50, target: TARGETS.hybrid_p50_ms_at_100k_embedded, applies: database === 'pglite', met: at100k.service.sequential.hybrid.latency.p50 <= TARGETS.hybrid_p50_ms_at_100k_embedded } : null,
  service_overhead: results.map((result) => ({
    chunks: result.chunks,
    measured_by: 'interleaved blocks, service and direct running at once',
    ratios: result.overhead_interleaved,
    ratios_of_separate_phases: result.overhead_vs_direct_service_runner,
    met: byMode((mode) => result.overhead_interleaved[mode] <= TARGETS.service_overhead_ratio_max),
  })),
};
const summary = {
  benchmark: 'search',
  database,
  date_started: startedAt.toISOString(),
  date_finished: new Date().toISOString(),
  machine: machineDescription(),
  git: gitAtStart,
  settings: {
    chunk_size: CHUNK_SIZE, chunk_overlap: CHUNK_OVERLAP, top_k: 10, skip_cache: true,
    sequential_queries_per_mode: SEQUENTIAL, warmup_queries: WARMUP,
    concurrent_clients: CONCURRENT_CLIENTS, concurrent_seconds_per_mode: CONCURRENT_SECONDS,
    uploads_in_flight: UPLOAD_BATCH > 1 ? BATCHES_IN_FLIGHT : UPLOADS_IN_FLIGHT, files_per_upload: UPLOAD_BATCH, cpu_profiles: PROFILE_DIR ?? null,
    note: 'latencies are client-observed milliseconds; direct = queryCollection() in this process (no HTTP, auth, collection lookup, or query-event writes): in the direct phase over the stopped service\'s data, in the interleaved phase over a copy of it (embedded database) or the same database (PostgreSQL) while the service runs',
  },
  corpus: {
    generator: 'bench/search/corpus.ts', vocabulary_words: VOCABULARY_SIZE, topics: TOPIC_COUNT,
    documents_total: nextDocument, distinct_queries: queries.length, sample_queries: queries.slice(0, 5),
  },
  targets: TARGETS,
  targets_met: targetsMet,
  ingestion: finalIngestion,
  growth: growthRuns,
  scales: results,
  bench_rss_mib: Math.round(process.memoryUsage().rss / 2 ** 20),
};
await mkdir(path.dirname(OUT), { recursive: true });
await writeFile(OUT, `${JSON.stringify(summary, null, 2)}\n`);

const pad = (value: unknown, width: number) => String(value).padStart(width);
const lines: string[] = [];
lines.push(`search benchmark, ${database}, ${machineDescription().cpus} cores`);
if (finalIngestion) lines.push(`ingestion: ${finalIngestion.documents} documents, ${finalIngestion.chunks} chunks in ${finalIngestion.seconds} s: ${finalIngestion.documents_per_s} documents/s, ${finalIngestion.chunks_per_s} chunks/s`);
lines.push(`${'chunks'.padStart(7)} ${'mode'.padEnd(8)} | ${'1 client p50/p95/p99'.padStart(22)} | ${'16 clients p50/p95/p99'.padStart(23)} ${'req/s'.padStart(6)} | ${'direct p50 svc/raw'.padStart(18)} | ${'ratio'.padStart(5)} ${'inter'.padStart(5)} | ${'LanceDB p50/p95/p99'.padStart(20)}`);
for (const result of results) {
  for (const mode of MODES) {
    const one = result.service.sequential[mode].latency;
    const many = result.service.concurrent[mode];
    const lance = result.lancedb[mode];
    lines.push(`${pad(result.chunks, 7)} ${mode.padEnd(8)} | ${pad(`${one.p50}/${one.p95}/${one.p99}`, 22)} | ${pad(`${many.latency.p50}/${many.latency.p95}/${many.latency.p99}`, 23)} ${pad(many.requests_per_s, 6)} | ${pad(`${result.direct.service_runner[mode].latency.p50}/${result.direct.raw_driver[mode].latency.p50}`, 18)} | ${pad(result.overhead_vs_direct_service_runner[mode], 5)} ${pad(result.overhead_interleaved[mode], 5)} | ${pad(`${lance.p50}/${lance.p95}/${lance.p99}`, 20)}`);
  }
}
if (largest) lines.push(`(LanceDB hybrid = RRF k 60 of 10-deep lists; with 50-deep lists as the service fuses: p50 ${largest.lancedb.hybrid_depth_50.p50} ms at ${largest.chunks} chunks)`);
lines.push(`written to ${OUT}`);
process.stdout.write(`${lines.join('\n')}\n`);
