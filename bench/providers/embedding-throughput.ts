/**
 * Embedding throughput against a provider that answers every request after 50 ms (the provider
 * fake, Cohere's shapes and its 96-texts limit, in its own process), one request at a time
 * (PROVIDER_CONCURRENCY=1) against the default of 8 in flight; then again at 250 ms a request,
 * nearer what a hosted model takes for a full batch:
 *
 *   1. the embedding stage of ingestion alone (embedChunkTexts, as ingest-document.ts calls it),
 *      2,048 chunk texts of one claimed batch;
 *   2. ingestion on the embedded database: 64 documents of 32 chunks uploaded through the API,
 *      then the workers started and timed until every document is ready (claiming, parsing,
 *      embedding, indexing, database writes).
 *
 * Run: npx tsx bench/providers/embedding-throughput.ts   (writes bench/results/providers.json)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { embedChunkTexts } from '../../src/embedding/embed-chunk-texts.js';
import { PluginRegistry } from '../../src/plugin-registry.js';
import { ONE_PARAGRAPH_CHUNKS, paragraphs } from '../../test/providers/provider-api.js';
import { buildTestApp, multipartUpload, setupAdmin } from '../../test/support/test-app.js';
import { machineDescription } from '../support/service-process.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const KEY = 'bench-provider-key';
const LATENCIES_MS = [50, 250];
const MODEL = 'embed-english-light-v3.0';
const DIMENSION = 384;
const STAGE_TEXTS = 2048;
const DOCUMENTS = 64;
const CHUNKS_PER_DOCUMENT = 32;
const CONCURRENCIES = [1, 8];
/** Each figure is the median of this many runs: the machine is shared, single runs vary by ±30 %. */
const REPETITIONS = 3;

interface FakeStats { maxInFlight: number; requests: number }

function ask<T>(child: ChildProcess, message: string | { latencyMs: number }, key: string): Promise<T> {
  return new Promise((resolve) => {
    const listener = (answer: Record<string, unknown>) => {
      if (!(key in answer)) return;
      child.off('message', listener);
      resolve(answer as T);
    };
    child.on('message', listener);
    child.send(message);
  });
}

async function startFake(): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = fork(path.join(here, 'fake-provider-process.ts'), [String(LATENCIES_MS[0]), KEY], { execArgv: ['--import', 'tsx'] });
  const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', (message) => resolve(message as { port: number })));
  return { child, baseUrl: `http://127.0.0.1:${port}/cohere/v2` };
}

async function embeddingStage(baseUrl: string, child: ChildProcess, concurrency: number) {
  await ask(child, 'reset', 'reset');
  const model = new PluginRegistry().create('embedding', 'cohere', { model: MODEL, apiKey: KEY, baseUrl }, {
    remoteCalls: { timeoutMs: 30_000, maxRetries: 0, concurrency }, logger: { warn() {}, info() {}, debug() {} },
  });
  const texts = paragraphs(STAGE_TEXTS, 'stage');
  const started = performance.now();
  const vectors = await embedChunkTexts(model, texts, DIMENSION, async () => undefined);
  const seconds = (performance.now() - started) / 1000;
  if (vectors.length !== texts.length) throw new Error('wrong number of vectors');
  const stats = await ask<FakeStats>(child, 'stats', 'maxInFlight');
  return { provider_concurrency: concurrency, texts: texts.length, seconds: round(seconds), chunks_per_second: Math.round(texts.length / seconds), requests: stats.requests, max_in_flight: stats.maxInFlight };
}

async function endToEnd(baseUrl: string, child: ChildProcess, concurrency: number) {
  await ask(child, 'reset', 'reset');
  // Workers start once every document is queued, so that ingestion alone is timed, in full claims.
  const ctx = await buildTestApp('pglite', { providerConcurrency: concurrency, providerMaxRetries: 0 }, { startWorkers: false });
  try {
    const cookie = await setupAdmin(ctx.app);
    const headers = { cookie };
    const created = await ctx.app.inject({
      method: 'POST', url: '/v1/collections', headers,
      payload: { name: 'bench', embedding_provider: 'cohere', embedding_model: MODEL, embedding_api_key: KEY, embedding_base_url: baseUrl, ...ONE_PARAGRAPH_CHUNKS },
    });
    if (created.statusCode !== 201) throw new Error(created.body);
    for (let index = 0; index < DOCUMENTS; index++) {
      const body = multipartUpload([{ filename: `doc${index}.txt`, content: paragraphs(CHUNKS_PER_DOCUMENT, `doc${index}`).join('\n\n'), contentType: 'text/plain' }]);
      const answer = await ctx.app.inject({ method: 'POST', url: '/v1/collections/bench/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
      if (answer.statusCode !== 202) throw new Error(answer.body);
    }
    const started = performance.now();
    await ctx.services.start();
    for (;;) {
      const stats = (await ctx.app.inject({ url: '/v1/collections/bench/stats', headers })).json() as { documents_by_status: Record<string, number>; chunks: number };
      if (stats.documents_by_status.ready === DOCUMENTS) break;
      if ((stats.documents_by_status.failed ?? 0) > 0) throw new Error('a document failed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const stats = await ask<FakeStats>(child, 'stats', 'maxInFlight');
    const chunks = DOCUMENTS * CHUNKS_PER_DOCUMENT;
    return {
      provider_concurrency: concurrency, documents: DOCUMENTS, chunks, seconds: round(seconds), chunks_per_second: Math.round(chunks / seconds),
      documents_per_second: round(DOCUMENTS / seconds), requests: stats.requests, max_in_flight: stats.maxInFlight,
    };
  } finally {
    await ctx.close();
  }
}

const round = (value: number) => Math.round(value * 100) / 100;

/** The run of median duration, with every run's seconds beside it. */
async function medianOf<T extends { seconds: number }>(run: () => Promise<T>): Promise<T & { seconds_of_runs: number[] }> {
  const runs: T[] = [];
  for (let index = 0; index < REPETITIONS; index++) runs.push(await run());
  const sorted = [...runs].sort((a, b) => a.seconds - b.seconds);
  return { ...sorted[Math.floor(sorted.length / 2)]!, seconds_of_runs: runs.map((item) => item.seconds) };
}

const fake = await startFake();
try {
  const speedup = (rows: Array<{ chunks_per_second: number }>) => round(rows[1]!.chunks_per_second / rows[0]!.chunks_per_second);
  const byLatency = [];
  for (const latencyMs of LATENCIES_MS) {
    await ask(fake.child, { latencyMs }, 'latencySet');
    const stage = [];
    const ingestion = [];
    for (const concurrency of CONCURRENCIES) {
      stage.push(await medianOf(() => embeddingStage(fake.baseUrl, fake.child, concurrency)));
      console.log(latencyMs, 'ms: embedding stage', stage.at(-1));
    }
    for (const concurrency of CONCURRENCIES) {
      ingestion.push(await medianOf(() => endToEnd(fake.baseUrl, fake.child, concurrency)));
      console.log(latencyMs, 'ms: ingestion', ingestion.at(-1));
    }
    byLatency.push({
      latency_ms: latencyMs,
      embedding_stage: { runs: stage, speedup: speedup(stage) },
      ingestion_end_to_end: { database: 'pglite', runs: ingestion, speedup: speedup(ingestion) },
    });
  }
  const result = {
    benchmark: 'providers-embedding-throughput',
    provider: "fake with Cohere's shapes and limit (96 texts a request), in its own process",
    model: MODEL,
    by_latency: byLatency,
    target_speedup: 4,
    machine: { ...machineDescription(), load_average_at_end: os.loadavg().map(round) },
    measured_at: new Date().toISOString(),
  };
  await writeFile(path.join(here, '../results/providers.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(byLatency.map((row) => ({ latency_ms: row.latency_ms, stage: row.embedding_stage.speedup, ingestion: row.ingestion_end_to_end.speedup }))));
} finally {
  fake.child.kill('SIGTERM');
}
