/**
 * A CPU profile of the service answering queries one at a time, as the one-client phase of
 * search-bench.ts sends them: where a request's time goes inside the service process, beside the
 * query code. Ingests `documents` of the search corpus (batches of 50) into a fresh data directory,
 * restarts the service with `--cpu-prof`, sends 300 warm-up queries and then `queries` timed ones
 * of one mode, and stops it (the profile is written at exit).
 *
 * Run: npm run build && npx tsx bench/search/query-profile.ts [mode=keyword] [documents=2600] [queries=3000]
 *   BENCH_PROFILE_DIR=/tmp/query-profile   where the .cpuprofile goes
 * then: npx tsx bench/search/cpu-profile-summary.ts <file> --from <the seconds printed>
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bootstrapAdmin } from '../support/service-process.js';
import { benchmarkQueries } from './corpus.js';
import { JsonClient, startServiceAt, uploadCorpusBatch } from './harness.js';

const mode = process.argv[2] ?? 'keyword';
const documents = Number(process.argv[3] ?? 2600);
const queries = Number(process.argv[4] ?? 3000);
const profileDir = process.env.BENCH_PROFILE_DIR ?? path.join(os.tmpdir(), 'query-profile');
const COLLECTION = 'bench';
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-query-profile-'));

async function ingest(baseUrl: string, key: string): Promise<number> {
  const client = new JsonClient(baseUrl, key);
  try {
    await client.request('POST', '/v1/collections', { name: COLLECTION });
    for (let first = 0; first < documents; first += 50) await uploadCorpusBatch(baseUrl, key, COLLECTION, first, Math.min(50, documents - first));
    for (;;) {
      const { body } = await client.request<{ documents: number; chunks: number; documents_by_status: Record<string, number> }>('GET', `/v1/collections/${COLLECTION}/stats`);
      if ((body.documents_by_status.ready ?? 0) === body.documents) return body.chunks;
      if (body.documents_by_status.failed) throw new Error(`${body.documents_by_status.failed} documents failed`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    client.close();
  }
}

try {
  const loader = await startServiceAt(dataDir);
  const { key } = await bootstrapAdmin(loader.baseUrl);
  const chunks = await ingest(loader.baseUrl, key).finally(() => loader.stop());

  const spawned = performance.now();
  const service = await startServiceAt(dataDir, {}, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
  const client = new JsonClient(service.baseUrl, key);
  const texts = benchmarkQueries(600);
  const run = async (count: number): Promise<number[]> => {
    const latencies: number[] = [];
    for (let index = 0; index < count; index++) {
      const body = { query: texts[index % texts.length], search_mode: mode, top_k: 10, skip_cache: true };
      latencies.push((await client.request('POST', `/v1/collections/${COLLECTION}/query`, body)).milliseconds);
    }
    return latencies.sort((a, b) => a - b);
  };
  await run(300);
  const timedFrom = (performance.now() - spawned) / 1000;
  const latencies = await run(queries);
  const timedSeconds = (performance.now() - spawned) / 1000 - timedFrom;
  client.close();
  await service.stop();
  process.stdout.write(`${chunks} chunks; ${queries} ${mode} queries, p50 ${latencies[Math.floor(latencies.length / 2)]!.toFixed(3)} ms\n`);
  process.stdout.write(`profile in ${profileDir}; the timed queries ran from ~${timedFrom.toFixed(1)} s for ${timedSeconds.toFixed(1)} s:\n`);
  process.stdout.write(`  npx tsx bench/search/cpu-profile-summary.ts <file> --from ${timedFrom.toFixed(1)} --to ${(timedFrom + timedSeconds).toFixed(1)}\n`);
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
