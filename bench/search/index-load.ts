/**
 * How long a start takes to load one large collection's in-process indexes on the embedded
 * database, without and with planner statistics. The service loads `documents` corpus documents
 * with its vacuum rounds off (EMBEDDED_VACUUM_INTERVAL_S=0; they do not analyze either, so the
 * tables have no statistics, as in the service), waits until the graph holds every row and stops.
 * Then, in this process on the same data: the vectors (rows placed, saved graph loaded), the BM25
 * index, and both at once as a start's warm-up and first query do; then ANALYZE of `chunks` and
 * `embedded_vectors`, and the same three again.
 *
 * Run: npm run build && npx tsx bench/search/index-load.ts [documents=50000]
 * Writes bench/results/index-load.json (BENCH_OUT overrides).
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedVectorStore } from '../../plugins/vector-store/embedded/index.js';
import { openDatabase } from '../../src/db/database.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import type { SqlRunner } from '../../src/plugins.js';
import { createMemoryKeywordIndex } from '../../src/search/keyword/memory-keyword-index.js';
import { bootstrapAdmin, graphsSettled, machineDescription, writeResult } from '../support/service-process.js';
import { JsonClient, loadCorpusDocuments, startServiceAt } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const documents = Number(process.argv[2] ?? 50_000);
const out = process.env.BENCH_OUT ?? path.join(root, 'bench/results/index-load.json');

const seconds = async (work: () => Promise<unknown>): Promise<number> => {
  const started = performance.now();
  await work();
  return Number(((performance.now() - started) / 1000).toFixed(2));
};

/** Each load on fresh indexes; the vectors from a copy of the saved graph (taking a snapshot removes it). */
async function loads(sql: SqlRunner, dataDir: string, collection: { id: string; dimension: number }) {
  const withSnapshot = async () => {
    const snapshots = await mkdtemp(path.join(os.tmpdir(), 'rs-index-load-graph-'));
    await cp(path.join(dataDir, 'vector-store'), snapshots, { recursive: true });
    return { store: new EmbeddedVectorStore(sql, { snapshotDirectory: snapshots }), snapshots };
  };
  const vectors = await withSnapshot();
  const vectorsSeconds = await seconds(() => vectors.store.ensureCollection(collection.id, collection.dimension));
  const source = (await vectors.store.describe(collection.id)).memory_index?.source;
  const keyword = createMemoryKeywordIndex(sql);
  const keywordSeconds = await seconds(() => keyword.load(collection.id));
  const both = await withSnapshot();
  const bothKeyword = createMemoryKeywordIndex(sql);
  const bothSeconds = await seconds(() => Promise.all([bothKeyword.load(collection.id), both.store.ensureCollection(collection.id, collection.dimension)]));
  for (const { store, snapshots } of [vectors, both]) {
    await store.close();
    await rm(snapshots, { recursive: true, force: true });
  }
  await keyword.close();
  await bothKeyword.close();
  return { vectors_s: vectorsSeconds, vector_source: source, bm25_s: keywordSeconds, both_at_once_s: bothSeconds };
}

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-index-load-'));
try {
  const service = await startServiceAt(dataDir, { EMBEDDED_VACUUM_INTERVAL_S: '0' });
  let chunks: number;
  try {
    const { key, cookie } = await bootstrapAdmin(service.baseUrl);
    const client = new JsonClient(service.baseUrl, key, 8);
    await client.request('POST', '/v1/collections', { name: 'loaded' });
    chunks = (await loadCorpusDocuments(service.baseUrl, key, client, 'loaded', documents)).chunks;
    await graphsSettled(service.baseUrl, cookie);
    client.close();
  } finally {
    await service.stop();
  }

  const db = await openDatabase({ dataDir: path.join(dataDir, 'db') });
  try {
    const sql = createSqlRunner(db);
    const [collection] = await sql<{ id: string; dimension: number }>("select id, dimension from collections where name = 'loaded'");
    const without = await loads(sql, dataDir, collection!);
    const analyzeSeconds = await seconds(async () => {
      await sql('analyze chunks');
      await sql('analyze embedded_vectors');
    });
    const analyzed = await loads(sql, dataDir, collection!);
    await writeResult(out, {
      benchmark: 'index-load', date: new Date().toISOString(), machine: machineDescription(), documents, chunks,
      without_statistics: without, analyze_s: analyzeSeconds, with_statistics: analyzed,
    });
  } finally {
    await db.close();
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
