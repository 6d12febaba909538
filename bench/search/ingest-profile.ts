/**
 * Where ingestion and per-query time goes: builds the service in process exactly as src/main.ts
 * does (file-backed PGlite in a temp directory, or DATABASE_URL), times every SQL statement
 * (grouped by its text, at the knex client that both the ORM and the SqlRunner go through) and
 * the ingestion stages (parse, embed, keyword index add, vector store upsert), then
 *   A. uploads N documents over HTTP with the workers stopped (the upload path alone): one at a time,
 *      or `batch` files per POST .../documents/batch request when a batch size is given,
 *   B. starts the workers and lets them ingest the queue alone (the worker path alone),
 *   C. runs 500 keyword and 500 hybrid queries one at a time, splitting the server's time into
 *      request lifecycle segments (auth, validation, handler, serialisation, write) and statements.
 * Each path is measured without the others competing for the one thread and PGlite's one connection.
 * The HTTP client runs in this process too: per-document wall times include its CPU.
 *
 * Run: npx tsx bench/search/ingest-profile.ts [documents=2000] [batch=1]   (DATABASE_URL: that database is dropped and recreated)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import pino from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import type { EmbeddingModel } from '../../src/plugins.js';
import { createServices } from '../../src/services.js';
import { bootstrapAdmin } from '../support/service-process.js';
import { documentText } from './corpus.js';
import { resetPostgresDatabase } from './harness.js';

const documents = Number(process.argv[2] ?? 2000);
const uploadBatch = Math.max(1, Number(process.argv[3] ?? 1));
const databaseUrl = process.env.DATABASE_URL || undefined;
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-ingest-profile-'));
if (databaseUrl) await resetPostgresDatabase(databaseUrl);

interface Tally { ms: number; count: number }
const sqlTally = new Map<string, Tally>();
const stageTally = new Map<string, Tally>();
let phase = 'setup';
const add = (map: Map<string, Tally>, key: string, ms: number) => {
  const tally = map.get(key) ?? { ms: 0, count: 0 };
  tally.ms += ms;
  tally.count += 1;
  map.set(key, tally);
};

const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
const db = await openDatabase({ databaseUrl, dataDir: databaseUrl ? undefined : path.join(dataDir, 'db') });

// Every statement, of the ORM and of the SqlRunner alike, reaches the knex client's _query().
type KnexClient = { _query: (connection: unknown, query: { sql: string }) => Promise<unknown> };
const knexClient = (db.fork() as EntityManager).getConnection().getKnex().client as KnexClient;
const runQuery = knexClient._query.bind(knexClient);
knexClient._query = async (connection, query) => {
  const started = performance.now();
  try {
    return await runQuery(connection, query);
  } finally {
    add(sqlTally, `${phase}: ${query.sql.replace(/\s+/g, ' ').slice(0, 110)}`, performance.now() - started);
  }
};

const logger = pino({ level: 'warn' });
const services = await createServices(config, db, logger);

/** Times a method of one of the objects the ingestion runtime uses (the very instances). */
function wrap<T extends object>(target: T, method: keyof T & string, label: string): void {
  const original = (target[method] as (...args: unknown[]) => unknown).bind(target);
  (target as Record<string, unknown>)[method] = async (...args: unknown[]) => {
    const started = performance.now();
    try {
      return await original(...args);
    } finally {
      add(stageTally, label, performance.now() - started);
    }
  };
}
wrap(services.indexes.vectorStore, 'upsert', 'vector store upsert (table + ANN index)');
wrap(services.indexes.keywordIndex, 'add', 'keyword index add');
for (const parser of services.parsers) wrap(parser, 'parse', 'parse');
const forCollection = services.embeddings.forCollection.bind(services.embeddings);
const wrappedModels = new WeakSet<EmbeddingModel>();
services.embeddings.forCollection = (collection) => {
  const model = forCollection(collection);
  if (!wrappedModels.has(model)) {
    wrappedModels.add(model);
    wrap(model, 'embed', 'embed');
  }
  return model;
};

const app = await buildApp({ services, logger });

// Request lifecycle marks for phase C: headers parsed, after the auth hook, after body parsing and
// validation, handler done, serialised, response written.
interface Marks { start: number; authenticated?: number; validated?: number; handled?: number; serialized?: number; totalMs?: number }
const marks = new WeakMap<object, Marks>();
const lifecycle: Array<Record<string, number>> = [];
app.server.prependListener('request', (raw: object) => marks.set(raw, { start: performance.now() }));
app.addHook('onRequest', async (request) => {
  const mark = marks.get(request.raw);
  if (mark) mark.authenticated = performance.now();
});
app.addHook('preHandler', async (request) => {
  const mark = marks.get(request.raw);
  if (mark) mark.validated = performance.now();
});
app.addHook('preSerialization', async (request, _reply, payload) => {
  const mark = marks.get(request.raw);
  if (mark) {
    mark.handled = performance.now();
    mark.totalMs = (payload as { timings?: { total_ms?: number } } | null)?.timings?.total_ms;
  }
  return payload;
});
app.addHook('onSend', async (request, _reply, payload) => {
  const mark = marks.get(request.raw);
  if (mark) mark.serialized = performance.now();
  return payload;
});
app.addHook('onResponse', async (request) => {
  const mark = marks.get(request.raw);
  if (!mark || phase !== 'query' || !mark.authenticated || !mark.validated || !mark.handled || !mark.serialized) return;
  const now = performance.now();
  lifecycle.push({
    'routing + auth hook': mark.authenticated - mark.start,
    'body parse + validation': mark.validated - mark.authenticated,
    'handler: queryCollection (its total_ms)': mark.totalMs ?? 0,
    'handler: the rest (collection lookup, cache, events)': mark.handled - mark.validated - (mark.totalMs ?? 0),
    serialisation: mark.serialized - mark.handled,
    'response write': now - mark.serialized,
    'server total': now - mark.start,
  });
});

await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
const { key } = await bootstrapAdmin(baseUrl);
const headers = { authorization: `Bearer ${key}` };
await fetch(`${baseUrl}/v1/collections`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench' }) });

function report(title: string, map: Map<string, Tally>, wallMs: number, rows = 20): void {
  const sorted = [...map].sort((a, b) => b[1].ms - a[1].ms).slice(0, rows);
  const total = sorted.reduce((sum, [, tally]) => sum + tally.ms, 0);
  process.stdout.write(`\n${title} (wall ${(wallMs / 1000).toFixed(2)} s, ${(wallMs / documents).toFixed(2)} ms per document; listed ${total.toFixed(0)} ms)\n`);
  for (const [name, tally] of sorted) {
    process.stdout.write(`${tally.ms.toFixed(0).padStart(8)} ms ${String(tally.count).padStart(7)}x ${(tally.ms / tally.count).toFixed(3).padStart(8)} ms/x ${(tally.ms / documents).toFixed(3).padStart(7)} ms/doc  ${name}\n`);
  }
}

try {
  // A. The upload path alone (no workers yet), one request at a time.
  sqlTally.clear();
  phase = 'upload';
  let started = performance.now();
  for (let first = 0; first < documents; first += uploadBatch) {
    const form = new FormData();
    form.append('metadata', JSON.stringify({ doc: first }));
    for (let index = first; index < Math.min(documents, first + uploadBatch); index++) {
      form.append('file', new Blob([documentText(index)], { type: 'text/plain' }), `doc-${index}.txt`);
    }
    const response = await fetch(`${baseUrl}/v1/collections/bench/documents${uploadBatch > 1 ? '/batch' : ''}`, { method: 'POST', headers, body: form });
    if (response.status !== 202) throw new Error(`upload: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
  }
  report('A. upload path: SQL by statement', sqlTally, performance.now() - started, 6);

  // B. The worker path alone.
  sqlTally.clear();
  phase = 'worker';
  started = performance.now();
  await services.start();
  for (;;) {
    const [row] = await services.sql<{ waiting: number | string }>(`select count(*) as waiting from documents where status in ('pending', 'processing')`);
    if (Number(row?.waiting) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const workerMs = performance.now() - started;
  const [chunks] = await services.sql<{ count: number | string }>('select count(*) as count from chunks');
  report('B. worker path: SQL by statement', sqlTally, workerMs);
  report('B. worker path: stages', stageTally, workerMs);
  process.stdout.write(`\nworker alone: ${Number(chunks?.count)} chunks, ${Math.round(Number(chunks?.count) / (workerMs / 1000))} chunks/s\n`);

  // C. The query path: lifecycle segments and statements, 500 queries per mode, one at a time.
  for (const mode of ['keyword', 'hybrid'] as const) {
    sqlTally.clear();
    lifecycle.length = 0;
    phase = 'query';
    started = performance.now();
    for (let index = 0; index < 500; index++) {
      const response = await fetch(`${baseUrl}/v1/collections/bench/query`, {
        method: 'POST', headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ query: documentText(index).split(/\s+/).slice(4, 7).join(' '), search_mode: mode, top_k: 10, skip_cache: true }),
      });
      await response.arrayBuffer();
    }
    const queryMs = performance.now() - started;
    phase = 'idle';
    process.stdout.write(`\nC. 500 ${mode} queries: ${(queryMs / 500).toFixed(2)} ms each (client included); server-side p50 per lifecycle segment:\n`);
    for (const segment of Object.keys(lifecycle[0] ?? {})) {
      const values = lifecycle.map((entry) => entry[segment]!).sort((a, b) => a - b);
      process.stdout.write(`${values[Math.floor(values.length / 2)]!.toFixed(3).padStart(9)} ms  ${segment}\n`);
    }
    for (const [name, tally] of [...sqlTally].sort((a, b) => b[1].ms - a[1].ms).slice(0, 6)) {
      process.stdout.write(`${tally.ms.toFixed(0).padStart(8)} ms ${String(tally.count).padStart(7)}x ${(tally.ms / tally.count).toFixed(3).padStart(8)} ms/x  ${name}\n`);
    }
  }
} finally {
  await app.close();
  await services.stop();
  await db.close();
  await rm(dataDir, { recursive: true, force: true });
}
