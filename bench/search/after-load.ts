/**
 * Queries right after a large load, through the public API on the built service: a collection is
 * loaded with `documents` corpus documents (about 2 KB each, 50 a batch, 4 batches in flight), and
 * as soon as every one is ready, a query runs every 100 ms for `seconds`, semantic, keyword and
 * hybrid in turn (topic words, top 10, `skip_cache`). On the embedded database the HNSW graph is
 * then still taking in the last rows it was sent. The p50 of each mode, and of its `semantic_ms`,
 * `keyword_ms` and `fetch_ms`, is given for each 10 s window, and on the embedded database the rows
 * the graph had not taken in yet at the window's first and last second (GET /v1/admin/vector-storage).
 * Then the service is stopped (SIGTERM: how long the stop took and its exit code) and, on the
 * embedded database, started again on the same data: how long until its first semantic query was
 * answered, how long that query took, and how long until the graph held every row again.
 *
 * Run: npm run build && npx tsx bench/search/after-load.ts [documents=50000] [seconds=60]
 * DATABASE_URL: PostgreSQL (that database is dropped and recreated); else the embedded database in
 * a temporary directory. Writes bench/results/after-load-<pglite|postgresql>.json (BENCH_OUT overrides).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapAdmin, graphsSettled, machineDescription, writeResult } from '../support/service-process.js';
import { topics } from './corpus.js';
import { JsonClient, loadCorpusDocuments, resetPostgresDatabase, startServiceAt, summarize } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const documents = Number(process.argv[2] ?? 50_000);
const watchSeconds = Number(process.argv[3] ?? 60);
const databaseUrl = process.env.DATABASE_URL;
const database = databaseUrl ? 'postgresql' : 'pglite';
const out = process.env.BENCH_OUT ?? path.join(root, `bench/results/after-load-${database}.json`);
const WINDOW_SECONDS = 10;
const modes = ['semantic', 'keyword', 'hybrid'] as const;
const stages = ['semantic_ms', 'keyword_ms', 'fetch_ms'] as const;

interface Sample {
  second: number;
  mode: (typeof modes)[number];
  milliseconds: number;
  timings: Partial<Record<(typeof stages)[number], number>>;
}

interface MemoryIndex {
  source?: string;
  load_seconds?: number;
  rows_awaiting_graph?: number;
  graph_usable?: boolean;
}

interface GraphSample {
  second: number;
  rows_awaiting_graph: number;
  graph_usable: boolean;
}

/** The embedded store's graph of the loaded collection, from GET /v1/admin/vector-storage. */
async function graphState(baseUrl: string, cookie: string, loadedAt: number): Promise<GraphSample & { memory_index: MemoryIndex | undefined }> {
  const response = await fetch(`${baseUrl}/v1/admin/vector-storage`, { headers: { cookie } });
  const { data } = (await response.json()) as { data: Array<{ collection: string; memory_index?: MemoryIndex }> };
  const index = data.find((entry) => entry.collection === 'loaded')?.memory_index;
  return { second: (performance.now() - loadedAt) / 1000, rows_awaiting_graph: index?.rows_awaiting_graph ?? 0, graph_usable: index?.graph_usable ?? false, memory_index: index };
}

if (databaseUrl) await resetPostgresDatabase(databaseUrl);
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-after-load-'));
let service = await startServiceAt(dataDir, databaseUrl ? { DATABASE_URL: databaseUrl } : {});
try {
  const { key, cookie } = await bootstrapAdmin(service.baseUrl);
  const client = new JsonClient(service.baseUrl, key, 8);
  await client.request('POST', '/v1/collections', { name: 'loaded' });
  const loaded = await loadCorpusDocuments(service.baseUrl, key, client, 'loaded', documents);
  const loadedAt = performance.now();

  const samples: Sample[] = [];
  const graphSamples: GraphSample[] = [];
  for (let n = 0; performance.now() - loadedAt < watchSeconds * 1000; n++) {
    if (n % 10 === 0 && !databaseUrl) graphSamples.push(await graphState(service.baseUrl, cookie, loadedAt));
    const mode = modes[n % modes.length]!;
    const query = await client.request<{ results: unknown[]; timings: Sample['timings'] }>('POST', '/v1/collections/loaded/query', {
      query: topics[n % topics.length]!.join(' '), search_mode: mode, top_k: 10, skip_cache: true,
    });
    samples.push({ second: (performance.now() - loadedAt) / 1000, mode, milliseconds: query.milliseconds, timings: query.body.timings });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  client.close();

  const windows = Array.from({ length: Math.ceil(watchSeconds / WINDOW_SECONDS) }, (_, index) => {
    const inWindow = samples.filter((sample) => Math.floor(sample.second / WINDOW_SECONDS) === index);
    const byMode = Object.fromEntries(modes.map((mode) => {
      const ofMode = inWindow.filter((sample) => sample.mode === mode);
      const stageP50 = Object.fromEntries(stages
        .map((stage) => [stage, ofMode.map((sample) => sample.timings[stage]).filter((value) => value !== undefined)] as const)
        .filter(([, values]) => values.length > 0)
        .map(([stage, values]) => [stage, summarize(values).p50]));
      return [mode, { queries: ofMode.length, p50_ms: summarize(ofMode.map((sample) => sample.milliseconds)).p50, stage_p50_ms: stageP50 }];
    }));
    const graphInWindow = graphSamples.filter((sample) => Math.floor(sample.second / WINDOW_SECONDS) === index);
    const graph = graphInWindow.length === 0 ? {} : {
      rows_awaiting_graph: { first: graphInWindow[0]!.rows_awaiting_graph, last: graphInWindow.at(-1)!.rows_awaiting_graph },
      graph_usable: graphInWindow.every((sample) => sample.graph_usable),
    };
    return { seconds_after_ready: `${index * WINDOW_SECONDS}-${(index + 1) * WINDOW_SECONDS}`, ...byMode, ...graph };
  });
  const machine = machineDescription();

  const stopStarted = performance.now();
  await service.stop();
  const stop = { seconds: Number(((performance.now() - stopStarted) / 1000).toFixed(1)), exit_code: service.child.exitCode };
  let restart: Record<string, unknown> | null = null;
  if (!databaseUrl) {
    const restartStarted = performance.now();
    service = await startServiceAt(dataDir);
    const healthySeconds = (performance.now() - restartStarted) / 1000;
    const restartedClient = new JsonClient(service.baseUrl, key, 1);
    const first = await restartedClient.request<unknown>('POST', '/v1/collections/loaded/query', { query: topics[0]!.join(' '), search_mode: 'semantic', top_k: 10, skip_cache: true });
    const firstAnsweredSeconds = (performance.now() - restartStarted) / 1000;
    restartedClient.close();
    const settleSeconds = await graphsSettled(service.baseUrl, cookie);
    restart = {
      healthy_s: Number(healthySeconds.toFixed(1)),
      first_semantic_query_answered_s: Number(firstAnsweredSeconds.toFixed(1)),
      first_semantic_query_ms: Number(first.milliseconds.toFixed(1)),
      graph_holds_every_row_s: Number((firstAnsweredSeconds + settleSeconds).toFixed(1)),
      memory_index: (await graphState(service.baseUrl, cookie, restartStarted)).memory_index,
    };
  }
  await writeResult(out, {
    benchmark: 'after-load', date: new Date().toISOString(), database, machine, documents, chunks: loaded.chunks,
    load_seconds: Number(loaded.seconds.toFixed(1)), windows, stop, restart,
  });
} finally {
  await service.stop();
  await rm(dataDir, { recursive: true, force: true });
}
