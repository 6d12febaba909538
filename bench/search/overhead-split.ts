/**
 * Where a keyword query's time goes in the service beyond the query code, one client, 10k chunks.
 * The service runs in this process (as src/main.ts builds it) with extra routes that exist only
 * here, all behind the same hooks, authentication, validation and collection lookup as the query
 * route; the client runs in a child process and sends the same keyword queries to each target in
 * alternating blocks (so machine drift falls on all of them alike):
 *
 * - `query`: the real `POST /v1/collections/:name/query`.
 * - `canned`: the full stack answering with a stored query response of the same size (what the
 *   service's HTTP layer costs).
 * - `query then canned`: runs the query, then answers with the stored response (what the query
 *   leaves behind for the response's serialization and write).
 * - `spin then canned`: busy-waits as long as the query code takes, then answers with the stored
 *   response (the same wait without the query's memory traffic).
 * - `bare in process`: a bare Fastify server in this same process answering with the stored response.
 * - `floor`: bench/search/http-floor.ts, a bare Fastify process, as search-bench.ts measures it.
 *
 * Hooks record, per target, the server-side phases: onRequest to preHandler (routing, body
 * parsing, authentication, validation), the handler, serialization, and the write until the
 * response finished.
 *
 * Run: npx tsx bench/search/overhead-split.ts   (BENCH_ROUNDS=20, BENCH_BLOCK=50; writes
 * bench/results/overhead-split.json)
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import pino from 'pino';
import { buildApp } from '../../src/app.js';
import { findCollection } from '../../src/collections/collections.service.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { requireActor } from '../../src/http/authenticate.js';
import { scope } from '../../src/http/route-access.js';
import { queryCollection } from '../../src/search/collection-query.js';
import { CollectionQueryBody } from '../../src/search/query-request.js';
import { createServices } from '../../src/services.js';
import { bootstrapAdmin, freePort, machineDescription, writeResult } from '../support/service-process.js';
import { benchmarkQueries } from './corpus.js';
import { JsonClient, startServiceAt, uploadCorpusBatch } from './harness.js';
import { startHttpFloor } from './http-floor.js';

const COLLECTION = 'bench';
const DOCUMENTS = 2600;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const BLOCK = Number(process.env.BENCH_BLOCK ?? 50);
const WARMUP = 300;

interface Target { name: string; baseUrl: string; path: string }

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round3 = (value: number) => Number(value.toFixed(3));

async function runClient(targets: Target[], key: string): Promise<Record<string, number>> {
  const texts = benchmarkQueries(600);
  const clients = targets.map((target) => new JsonClient(target.baseUrl, key));
  const latencies = targets.map(() => [] as number[]);
  let sent = 0;
  const send = async (index: number) => {
    const body = { query: texts[sent++ % texts.length], search_mode: 'keyword', top_k: 10, skip_cache: true };
    return (await clients[index]!.request('POST', targets[index]!.path, body)).milliseconds;
  };
  for (let index = 0; index < targets.length; index++) for (let count = 0; count < WARMUP; count++) await send(index);
  for (let round = 0; round < ROUNDS; round++) {
    for (let step = 0; step < targets.length; step++) {
      const index = (round + step) % targets.length;
      for (let count = 0; count < BLOCK; count++) latencies[index]!.push(await send(index));
    }
  }
  for (const client of clients) client.close();
  return Object.fromEntries(targets.map((target, index) => [target.name, round3(median(latencies[index]!))]));
}

if (process.argv[2] === 'client') {
  process.send!(await runClient(JSON.parse(process.argv[3]!) as Target[], process.argv[4]!));
  process.exit(0);
}

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-overhead-split-'));
try {
  const loader = await startServiceAt(dataDir);
  const { key } = await bootstrapAdmin(loader.baseUrl);
  const loaderClient = new JsonClient(loader.baseUrl, key);
  await loaderClient.request('POST', '/v1/collections', { name: COLLECTION });
  for (let first = 0; first < DOCUMENTS; first += 50) await uploadCorpusBatch(loader.baseUrl, key, COLLECTION, first, 50);
  let chunks = 0;
  for (;;) {
    const { body } = await loaderClient.request('GET', `/v1/collections/${COLLECTION}/stats`);
    if ((body.documents_by_status.ready ?? 0) === body.documents) {
      chunks = body.chunks;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  loaderClient.close();
  await loader.stop();

  process.env.DATA_DIR = dataDir;
  const config = loadConfig();
  const db = await openDatabase({ dataDir: path.join(dataDir, 'db') });
  const services = await createServices(config, db, pino({ level: 'warn' }));
  const app = await buildApp({ services });

  const phases: Record<string, Record<string, number[]>> = {};
  const marks = new WeakMap<object, Record<string, number>>();
  const mark = (request: object, name: string) => {
    const times = marks.get(request) ?? {};
    times[name] = performance.now();
    marks.set(request, times);
  };
  app.addHook('onRequest', async (request) => mark(request, 'request'));
  app.addHook('preHandler', async (request) => mark(request, 'handler'));
  app.addHook('preSerialization', async (request, _reply, payload) => {
    mark(request, 'serialize');
    return payload;
  });
  app.addHook('onSend', async (request, _reply, payload) => {
    mark(request, 'write');
    return payload;
  });
  app.addHook('onResponse', async (request) => {
    const times = marks.get(request)!;
    const finished = performance.now();
    const phase = (phases[request.url] ??= { routing_parsing_auth_validation: [], handler: [], serialization: [], write: [], total: [] });
    phase.routing_parsing_auth_validation!.push(times.handler! - times.request!);
    phase.handler!.push(times.serialize! - times.handler!);
    phase.serialization!.push(times.write! - times.serialize!);
    phase.write!.push(finished - times.write!);
    phase.total!.push(finished - times.request!);
  });

  let stored: unknown = null;
  const queryTimes: number[] = [];
  const route = { config: { ...scope('query:read'), acceptsUnstorableValues: true }, schema: { body: CollectionQueryBody } };
  app.post('/bench/canned', route, async (request) => {
    await findCollection(services.collections, requireActor(request), COLLECTION);
    return stored;
  });
  app.post('/bench/query-then-canned', route, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), COLLECTION);
    const started = performance.now();
    await queryCollection(services.queryRuntime, collection, request.body);
    queryTimes.push(performance.now() - started);
    return stored;
  });
  app.post('/bench/spin-then-canned', route, async (request) => {
    await findCollection(services.collections, requireActor(request), COLLECTION);
    const until = performance.now() + median(queryTimes.length > 0 ? queryTimes : [1]);
    while (performance.now() < until);
    return stored;
  });
  await services.start();
  const port = await freePort();
  await app.listen({ port, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${port}`;
  const probe = new JsonClient(baseUrl, key);
  stored = (await probe.request('POST', `/v1/collections/${COLLECTION}/query`, { query: benchmarkQueries(1)[0], search_mode: 'keyword', top_k: 10, skip_cache: true })).body;
  probe.close();
  const bare = Fastify({ logger: false });
  bare.post('/v1/collections/:name/query', async () => stored);
  const barePort = await freePort();
  await bare.listen({ port: barePort, host: '127.0.0.1' });
  const floor = await startHttpFloor({ keyword: stored }, dataDir);

  const queryPath = `/v1/collections/${COLLECTION}/query`;
  const targets: Target[] = [
    { name: 'query', baseUrl, path: queryPath },
    { name: 'canned', baseUrl, path: '/bench/canned' },
    { name: 'query then canned', baseUrl, path: '/bench/query-then-canned' },
    { name: 'spin then canned', baseUrl, path: '/bench/spin-then-canned' },
    { name: 'bare in process', baseUrl: `http://127.0.0.1:${barePort}`, path: queryPath },
    { name: 'floor', baseUrl: floor.baseUrl, path: queryPath },
  ];
  const child = fork(fileURLToPath(import.meta.url), ['client', JSON.stringify(targets), key], { execArgv: ['--import', 'tsx'] });
  const clientP50 = await new Promise<Record<string, number>>((resolve) => child.once('message', (message) => resolve(message as Record<string, number>)));
  await floor.stop();
  await bare.close();
  await app.close();
  await services.stop();
  await db.close();

  const nameByPath = new Map(targets.filter((target) => target.baseUrl === baseUrl).map((target) => [target.path, target.name]));
  await writeResult(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../results/overhead-split.json'), {
    benchmark: 'overhead-split', measured_at: new Date().toISOString(), machine: machineDescription(), database: 'pglite',
    chunks, mode: 'keyword', rounds: ROUNDS, block: BLOCK, response_bytes: Buffer.byteLength(JSON.stringify(stored)),
    client_p50_ms: clientP50,
    query_code_p50_ms: round3(median(queryTimes)),
    server_p50_ms: Object.fromEntries([...Object.entries(phases)].filter(([url]) => nameByPath.has(url)).map(([url, phase]) => [
      nameByPath.get(url)!, Object.fromEntries(Object.entries(phase).map(([name, values]) => [name, round3(median(values))])),
    ])),
  });
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
