/**
 * Queries on one collection while another collection is written, through the public API of the
 * compiled service on the embedded database:
 *
 * 1. Collection `quiet` is filled with corpus documents (bench/search/corpus.ts) to ~10k chunks
 *    (BENCH_QUIET_CHUNKS), in batches of 50.
 * 2. idle: one client queries `quiet`, cycling through semantic, hybrid and keyword (top_k 10,
 *    skip_cache), BENCH_IDLE_QUERIES queries per mode after as many warm-up queries. Keyword
 *    queries never reach the vector store: they show what the writes cost every request (the main
 *    thread and the database are shared), against which semantic and hybrid are judged.
 * 3. ingest: BENCH_LARGE_DOCUMENTS documents of ~4,000 chunks each (BENCH_LARGE_DOCUMENT_CORPUS_DOCS
 *    corpus documents joined) are uploaded to a new collection `busy-<round>` at once; the client
 *    queries `quiet` until all of them are ready. A document this large is written in the
 *    ingestion's 4,096-chunk slices, so the store receives upserts of thousands of vectors, as in
 *    the user report this reproduces.
 * 4. reprocess: POST /v1/collections/busy-<round>/reprocess rewrites every chunk of it in place
 *    (graph removals and inserts of the same keys); the client queries `quiet` until it is done.
 *
 * Steps 3 and 4 run BENCH_ROUNDS times (a phase lasts only a few seconds: ~50 queries per mode),
 * and each phase's queries are summarised over all rounds.
 *
 * Each phase reports, per mode, the latency seen by the client and the stage timings the response
 * carries (`semantic_ms` is the vector store's search), as p50 / p95 / p99 / max. Before each phase
 * the bench waits (at most BENCH_QUIET_WAIT_S) until other processes use < 0.3 cores, and records
 * how busy the machine was during the phase (`cpu.foreign_cores`).
 *
 * Run: npm run build && npx tsx bench/search/ingest-while-querying.ts
 *   BENCH_QUIET_CHUNKS=10000                 chunks in the queried collection
 *   BENCH_LARGE_DOCUMENTS=4                  documents written to each `busy-<round>`
 *   BENCH_LARGE_DOCUMENT_CORPUS_DOCS=1050    corpus documents per large document (~4,000 chunks)
 *   BENCH_IDLE_QUERIES=300                   timed idle queries per mode
 *   BENCH_ROUNDS=3                           rounds of ingest and reprocess
 *   BENCH_QUIET_WAIT_S=120                   longest wait for a quiet machine before each phase
 *   BENCH_LABEL=...                          what was measured (the code's state), kept in the result
 *   BENCH_OUT=bench/results/ingest-while-querying.json
 */
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { parsePlainText } from '../../plugins/parser/text/index.js';
import { chunkElements } from '../../src/chunking/chunk-elements.js';
import type { QueryTimings } from '../../src/search/collection-query.js';
import { bootstrapAdmin, machineDescription, writeResult } from '../support/service-process.js';
import { benchmarkQueries, documentText } from './corpus.js';
import {
  CpuMonitor, JsonClient, startServiceAt, summarize, uploadCorpusBatch, waitForQuiet, type CpuUse, type LatencySummary,
} from './harness.js';

const QUIET_CHUNKS = Number(process.env.BENCH_QUIET_CHUNKS ?? 10_000);
const LARGE_DOCUMENTS = Number(process.env.BENCH_LARGE_DOCUMENTS ?? 4);
const LARGE_DOCUMENT_CORPUS_DOCS = Number(process.env.BENCH_LARGE_DOCUMENT_CORPUS_DOCS ?? 1_050);
const IDLE_QUERIES = Number(process.env.BENCH_IDLE_QUERIES ?? 300);
const QUIET_WAIT_S = Number(process.env.BENCH_QUIET_WAIT_S ?? 120);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const OUT = process.env.BENCH_OUT ?? 'bench/results/ingest-while-querying.json';
const CHUNK_SIZE = 800;
const CHUNK_OVERLAP = 100;
const UPLOAD_BATCH = 50;
const QUIET = 'quiet';
/** The large documents' corpus documents start here, far past the quiet collection's, so none is a duplicate. */
const LARGE_DOCUMENT_FIRST_CORPUS_DOC = 1_000_000;

const MODES = ['semantic', 'hybrid', 'keyword'] as const;
type Mode = (typeof MODES)[number];
/** The stage timings summarised per phase. */
const STAGES = ['total_ms', 'embedding_ms', 'semantic_ms', 'keyword_ms', 'fetch_ms'] as const;

const log = (message: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const queries = benchmarkQueries(500);

interface Stats {
  documents: number;
  chunks: number;
  documents_by_status: Record<string, number>;
}

interface QueryAnswer {
  timings: QueryTimings;
}

type Samples = Record<Mode, { latencies: number[]; timings: QueryTimings[] }>;

interface ModeResult {
  latency: LatencySummary;
  stages: Partial<Record<(typeof STAGES)[number], LatencySummary>>;
}

/** One round of a write phase: how long it took, what it wrote, how busy the machine was. */
interface WriteRound {
  seconds: number;
  busy_chunks_written: number;
  busy_chunks_per_s: number;
  quiet: { waited_s: number; foreign_cores: number };
  cpu: CpuUse;
}

const emptySamples = (): Samples => Object.fromEntries(MODES.map((mode) => [mode, { latencies: [], timings: [] }])) as unknown as Samples;

const chunksOfDocument = (index: number): number =>
  chunkElements(parsePlainText(documentText(index)).elements, { chunkSize: CHUNK_SIZE, chunkOverlap: CHUNK_OVERLAP, strategy: 'recursive' }).length;

async function stats(client: JsonClient, collection: string): Promise<Stats> {
  return (await client.request<Stats>('GET', `/v1/collections/${collection}/stats`)).body;
}

/** Polls until every document of the collection is ready; a failed document throws. */
async function untilReady(client: JsonClient, collection: string, documents: number): Promise<Stats> {
  for (;;) {
    const current = await stats(client, collection);
    if ((current.documents_by_status.failed ?? 0) > 0) throw new Error(`${collection}: ${current.documents_by_status.failed} documents failed`);
    if ((current.documents_by_status.ready ?? 0) === documents) return current;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * One client querying `quiet`, one mode after the other, until `done` settles (or `perMode`
 * queries per mode when given); each answer's client latency and stage timings go to `samples`.
 */
async function queryLoop(client: JsonClient, samples: Samples, until: { done?: Promise<unknown>; perMode?: number }): Promise<void> {
  let finished = false;
  void until.done?.finally(() => { finished = true; });
  for (let index = 0; !finished && (until.perMode === undefined || index < until.perMode * MODES.length); index++) {
    const mode = MODES[index % MODES.length]!;
    const response = await client.request<QueryAnswer>('POST', `/v1/collections/${QUIET}/query`, {
      query: queries[index % queries.length]!, search_mode: mode, top_k: 10, skip_cache: true,
    });
    samples[mode].latencies.push(response.milliseconds);
    samples[mode].timings.push(response.body.timings);
  }
}

function summarizeSamples(samples: Samples): Record<Mode, ModeResult> {
  return Object.fromEntries(MODES.map((mode) => {
    const stages: ModeResult['stages'] = {};
    for (const stage of STAGES) {
      const values = samples[mode].timings.map((timings) => timings[stage]).filter((value): value is number => typeof value === 'number');
      if (values.length > 0) stages[stage] = summarize(values);
    }
    return [mode, { latency: summarize(samples[mode].latencies), stages }];
  })) as Record<Mode, ModeResult>;
}

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-bench-ingest-while-querying-'));
const service = await startServiceAt(dataDir);
const ownPids = () => [process.pid, service.child.pid!];

/** Queries `quiet` into `samples` while `write` runs (it returns the chunks it wrote); the round ends with it. */
async function writeRound(client: JsonClient, samples: Samples, write: () => Promise<number>): Promise<WriteRound> {
  const quiet = await waitForQuiet(ownPids, 0.3, QUIET_WAIT_S, log);
  const monitor = new CpuMonitor(ownPids);
  const started = performance.now();
  const writing = write();
  await queryLoop(client, samples, { done: writing });
  const written = await writing;
  const seconds = (performance.now() - started) / 1000;
  return { seconds: Number(seconds.toFixed(2)), busy_chunks_written: written, busy_chunks_per_s: Math.round(written / seconds), quiet, cpu: monitor.end() };
}

async function uploadLargeDocument(baseUrl: string, key: string, collection: string, index: number): Promise<void> {
  const first = LARGE_DOCUMENT_FIRST_CORPUS_DOC + index * LARGE_DOCUMENT_CORPUS_DOCS;
  const text = Array.from({ length: LARGE_DOCUMENT_CORPUS_DOCS }, (_, offset) => documentText(first + offset)).join('\n\n');
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), `large-${index}.txt`);
  const response = await fetch(`${baseUrl}/v1/collections/${collection}/documents`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  if (response.status !== 202) throw new Error(`large document ${index}: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
}

try {
  const { key } = await bootstrapAdmin(service.baseUrl);
  const client = new JsonClient(service.baseUrl, key);
  const poller = new JsonClient(service.baseUrl, key, 2);
  const createCollection = (name: string) => client.request('POST', '/v1/collections', { name, chunk_size: CHUNK_SIZE, chunk_overlap: CHUNK_OVERLAP });
  await createCollection(QUIET);

  let quietDocuments = 0;
  for (let planned = 0; planned < QUIET_CHUNKS; quietDocuments++) planned += chunksOfDocument(quietDocuments);
  log(`filling ${QUIET} with ${quietDocuments} documents (~${QUIET_CHUNKS} chunks)`);
  for (let first = 0; first < quietDocuments; first += UPLOAD_BATCH) {
    await uploadCorpusBatch(service.baseUrl, key, QUIET, first, Math.min(UPLOAD_BATCH, quietDocuments - first));
  }
  const quietStats = await untilReady(poller, QUIET, quietDocuments);
  log(`  ${quietStats.chunks} chunks`);

  log(`idle: ${IDLE_QUERIES} warm-up and ${IDLE_QUERIES} timed queries per mode`);
  await queryLoop(client, emptySamples(), { perMode: IDLE_QUERIES });
  const idleQuiet = await waitForQuiet(ownPids, 0.3, QUIET_WAIT_S, log);
  const idleMonitor = new CpuMonitor(ownPids);
  const idleStarted = performance.now();
  const idleSamples = emptySamples();
  await queryLoop(client, idleSamples, { perMode: IDLE_QUERIES });
  const idle = {
    quiet: idleQuiet, seconds: Number(((performance.now() - idleStarted) / 1000).toFixed(2)), by_mode: summarizeSamples(idleSamples), cpu: idleMonitor.end(),
  };

  const ingestSamples = emptySamples();
  const reprocessSamples = emptySamples();
  const ingestRounds: WriteRound[] = [];
  const reprocessRounds: WriteRound[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const busy = `busy-${round}`;
    await createCollection(busy);
    log(`round ${round}: ingest ${LARGE_DOCUMENTS} documents of ${LARGE_DOCUMENT_CORPUS_DOCS} corpus documents each into ${busy}`);
    ingestRounds.push(await writeRound(client, ingestSamples, async () => {
      await Promise.all(Array.from({ length: LARGE_DOCUMENTS }, (_, index) => uploadLargeDocument(service.baseUrl, key, busy, (round - 1) * LARGE_DOCUMENTS + index)));
      return (await untilReady(poller, busy, LARGE_DOCUMENTS)).chunks;
    }));
    log(`round ${round}: reprocess ${busy}`);
    reprocessRounds.push(await writeRound(client, reprocessSamples, async () => {
      await client.request('POST', `/v1/collections/${busy}/reprocess`);
      return (await untilReady(poller, busy, LARGE_DOCUMENTS)).chunks;
    }));
  }

  client.close();
  poller.close();
  await writeResult(OUT, {
    benchmark: 'ingest-while-querying',
    label: process.env.BENCH_LABEL ?? null,
    date: new Date().toISOString(),
    machine: machineDescription(),
    settings: {
      quiet_chunks: quietStats.chunks, large_documents: LARGE_DOCUMENTS, large_document_corpus_docs: LARGE_DOCUMENT_CORPUS_DOCS, rounds: ROUNDS,
      idle_queries_per_mode: IDLE_QUERIES, top_k: 10, chunk_size: CHUNK_SIZE, chunk_overlap: CHUNK_OVERLAP, database: 'pglite',
    },
    phases: {
      idle,
      ingest: { by_mode: summarizeSamples(ingestSamples), rounds: ingestRounds },
      reprocess: { by_mode: summarizeSamples(reprocessSamples), rounds: reprocessRounds },
    },
  });
} finally {
  await service.stop();
  await rm(dataDir, { recursive: true, force: true });
}
