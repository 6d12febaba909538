/**
 * What each query option costs a query, through the public API on the built service:
 * `document_ids` (10 documents), `context_window: 2`, `max_per_document: 1` and `highlight: true`,
 * each against the same queries without options, in every mode, at each size of the collection.
 * The option sets take turns in blocks (the first set rotating), so the machine's drift falls on all
 * of them alike. `top_k` 10, `skip_cache`, one client.
 *
 * Run: npm run build && npx tsx bench/search/query-options.ts [chunks=10000,100000]
 * DATABASE_URL: PostgreSQL (that database is dropped and recreated); else the embedded database.
 * Writes bench/results/query-options-<pglite|postgresql>.json (BENCH_OUT overrides).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapAdmin, machineDescription, writeResult } from '../support/service-process.js';
import { benchmarkQueries } from './corpus.js';
import { JsonClient, resetPostgresDatabase, startServiceAt, summarize, uploadCorpusBatch, waitForIngestion } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const sizes = (process.argv[2] ?? '10000,100000').split(',').map(Number);
const databaseUrl = process.env.DATABASE_URL;
const database = databaseUrl ? 'postgresql' : 'pglite';
const out = process.env.BENCH_OUT ?? path.join(root, `bench/results/query-options-${database}.json`);
const ROUNDS = 10;
const BLOCK = 20;
const MODES = ['semantic', 'keyword', 'hybrid'] as const;
const log = (message: string) => process.stderr.write(`[query-options] ${message}\n`);

type Answer = { results: unknown[]; timings: Record<string, number> };

if (databaseUrl) await resetPostgresDatabase(databaseUrl);
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-query-options-'));
const service = await startServiceAt(dataDir, databaseUrl ? { DATABASE_URL: databaseUrl } : {});
const results: Record<string, unknown> = {};
try {
  const { key } = await bootstrapAdmin(service.baseUrl);
  const client = new JsonClient(service.baseUrl, key, 4);
  await client.request('POST', '/v1/collections', { name: 'options' });
  let uploaded = 0;
  for (const size of sizes) {
    let stats = await waitForIngestion(client, 'options');
    while (stats.chunks < size) {
      // About 3.8 chunks a corpus document.
      const batches = Math.max(1, Math.ceil((size - stats.chunks) / 3.8 / 50));
      for (let batch = 0; batch < batches; batch++, uploaded += 50) await uploadCorpusBatch(service.baseUrl, key, 'options', uploaded, 50);
      stats = await waitForIngestion(client, 'options');
    }
    log(`${stats.chunks} chunks`);
    const documents = await client.request<{ data: Array<{ id: string }> }>('GET', '/v1/collections/options/documents?limit=10');
    const optionSets: Record<string, Record<string, unknown>> = {
      none: {},
      document_ids: { document_ids: documents.body.data.map((document) => document.id) },
      context_window: { context_window: 2 },
      max_per_document: { max_per_document: 1 },
      highlight: { highlight: true },
    };
    const names = Object.keys(optionSets);
    const queries = benchmarkQueries(ROUNDS * BLOCK);
    const perSize: Record<string, unknown> = {};
    for (const mode of MODES) {
      const client_ms: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
      const server_ms: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
      const stage_ms: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
      const stageOf: Record<string, string> = { document_ids: 'scope_ms', context_window: 'context_ms', max_per_document: 'per_document_ms' };
      for (const query of queries.slice(0, 20)) await client.request('POST', '/v1/collections/options/query', { query, search_mode: mode, skip_cache: true });
      for (let round = 0; round < ROUNDS; round++) {
        const block = queries.slice(round * BLOCK, (round + 1) * BLOCK);
        for (let turn = 0; turn < names.length; turn++) {
          const name = names[(round + turn) % names.length]!;
          for (const query of block) {
            const answer = await client.request<Answer>('POST', '/v1/collections/options/query', { query, search_mode: mode, top_k: 10, skip_cache: true, ...optionSets[name] });
            client_ms[name]!.push(answer.milliseconds);
            server_ms[name]!.push(answer.body.timings.total_ms!);
            const stage = stageOf[name];
            if (stage) stage_ms[name]!.push(answer.body.timings[stage] ?? Number.NaN);
          }
        }
      }
      const baseline = summarize(client_ms.none!).p50;
      perSize[mode] = Object.fromEntries(names.map((name) => {
        const client = summarize(client_ms[name]!);
        return [name, {
          client_p50_ms: client.p50,
          client_p95_ms: client.p95,
          server_total_p50_ms: summarize(server_ms[name]!).p50,
          added_p50_ms: Number((client.p50 - baseline).toFixed(2)),
          ...(stage_ms[name]!.length > 0 ? { own_stage_p50_ms: summarize(stage_ms[name]!).p50 } : {}),
        }];
      }));
      log(`${stats.chunks} chunks, ${mode}: ${JSON.stringify(perSize[mode])}`);
    }
    results[String(stats.chunks)] = perSize;
  }
  client.close();
} finally {
  await service.stop();
  await rm(dataDir, { recursive: true, force: true });
}
await writeResult(out, { benchmark: 'query-options', measured_at: new Date().toISOString(), machine: machineDescription(), database, rounds: ROUNDS, block: BLOCK, by_chunks: results });
