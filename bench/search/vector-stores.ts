/**
 * Vector stores: insert rate, query latency (p50/p95, one query at a time) and recall@10 against
 * exact search, on clustered 384-dim vectors (100 Gaussian centres, unit noise: a query's true
 * neighbours share its centre, so recall measures whether the graph finds the right ones).
 *
 * 1. usearch settings sweep (in memory) at --rows vectors.
 * 2. The embedded store on PGlite (file-backed, as in production) at --rows: insert rate including
 *    persistence, unfiltered and filtered queries, rebuild time after a restart.
 * 3. Threshold study (in memory): exact scan vs HNSW + post-filtering across filter selectivities.
 * 4. Comparison at --comparison-rows: embedded and pgvector, on PGlite and on PostgreSQL (a scratch
 *    database on --database-url's server, dropped afterwards).
 *
 * Usage: npx tsx bench/search/vector-stores.ts [--rows 100000] [--comparison-rows 20000]
 *          [--queries 200] [--database-url postgresql://postgres@127.0.0.1:5432/test] [--skip-postgresql]
 * Writes bench/results/vector-stores.json. The machine's load average is recorded: other processes
 * on a 2-core machine change every figure here.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import usearch, { type BatchMatches } from 'usearch';
import { CollectionVectors, type AnnSettings } from '../../plugins/vector-store/embedded/collection-vectors.js';
import { defaultSearchThresholds, searchCollectionVectors, type SearchThresholds } from '../../plugins/vector-store/embedded/filtered-search.js';
import { GraphThread } from '../../plugins/vector-store/embedded/graph-thread.js';
import { EmbeddedVectorStore } from '../../plugins/vector-store/embedded/index.js';
import { normalised } from '../../plugins/vector-store/embedded/row-block.js';
import { EmbeddedVectorTable } from '../../plugins/vector-store/embedded/vector-table.js';
import { PgvectorStore } from '../../plugins/vector-store/pgvector/index.js';
import { openDatabase, type Database } from '../../src/db/database.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import type { MetadataFilter, VectorHit, VectorRecord, VectorStore } from '../../src/plugins.js';
import { parseFilter } from '../../src/search/filters/parse-filter.js';
import { clusteredVectorSource } from './clustered-vectors.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    'comparison-rows': { type: 'string', default: '20000' },
    'indexed-insert-rows': { type: 'string', default: '1000' },
    queries: { type: 'string', default: '200' },
    'filtered-queries': { type: 'string', default: '50' },
    'database-url': { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/test' },
    'skip-postgresql': { type: 'boolean', default: false },
  },
});
const rowCount = Number(args.rows);
const comparisonRows = Number(args['comparison-rows']);
const indexedInsertRows = Number(args['indexed-insert-rows']);
const queryCount = Number(args.queries);
const filteredQueryCount = Number(args['filtered-queries']);
const dimension = 384;
const clusterCount = 100;
const tenantCount = 20;
const upsertBatchRows = 1_000;
const topK = 10;
const resultPath = fileURLToPath(new URL('../results/vector-stores.json', import.meta.url));
const log = (message: string): void => void process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);

// ---------- data ----------

const clusteredVectors = clusteredVectorSource({ seed: 384_100, dimension, clusterCount });

log(`generating ${rowCount} vectors`);
const data = clusteredVectors(rowCount);
const queries = clusteredVectors(queryCount);
const rowOf = (matrix: Float32Array, row: number): Float32Array => matrix.subarray(row * dimension, (row + 1) * dimension);
/** bucket is uniform in [0, 100) and independent of the cluster, so `bucket < s` selects s%. */
const metadataOf = (row: number): Record<string, unknown> => ({ bucket: row % 100, lang: ['en', 'fr', 'de', 'es'][row % 4] });
const tenantOf = (row: number): string => `tenant-${Math.floor(row / 7) % tenantCount}`;
/** Keys are row + 1 (+ keyOffset: chunk keys are unique across collections, as in the service). */
const recordsOf = (collectionId: string, start: number, end: number, keyOffset = 0): VectorRecord[] =>
  Array.from({ length: end - start }, (_, i) => ({
    key: keyOffset + start + i + 1,
    collectionId,
    documentId: null,
    embedding: rowOf(data, start + i),
    metadata: metadataOf(start + i),
    tenant: tenantOf(start + i),
  }));

/** Exact top-10 keys (row + 1) by cosine over the first `rows` rows, via usearch's SIMD exact search. */
function exactTruth(rows: number): number[][] {
  const matches = usearch.exactSearch(data.subarray(0, rows * dimension), queries, dimension, topK, usearch.MetricKind.Cos, 0) as BatchMatches;
  return Array.from({ length: queryCount }, (_, q) => Array.from(matches.keys.subarray(q * topK, (q + 1) * topK), (row) => Number(row) + 1));
}

/** Exact top-10 keys among the allowed rows, in double precision. */
function exactAllowedTruth(query: Float32Array, rows: number, allowed: (row: number) => boolean): number[] {
  const unit = normalised(query);
  const scored: Array<[number, number]> = [];
  for (let row = 0; row < rows; row++) {
    if (!allowed(row)) continue;
    const vector = rowOf(data, row);
    let dot = 0;
    let norm = 0;
    for (let i = 0; i < dimension; i++) {
      dot += unit[i] * vector[i];
      norm += vector[i] * vector[i];
    }
    scored.push([row + 1, dot / Math.sqrt(norm)]);
  }
  return scored.sort((a, b) => b[1] - a[1]).slice(0, topK).map(([key]) => key);
}

// ---------- measuring ----------

interface QueryFigures {
  p50_ms: number;
  p95_ms: number;
  recall_at_10: number;
}

const round = (value: number, digits = 3): number => Number(value.toFixed(digits));

function recall(hits: number[], truth: number[]): number {
  const expected = new Set(truth);
  return hits.filter((key) => expected.has(key)).length / Math.max(truth.length, 1);
}

async function measureQueries(count: number, search: (q: number) => Promise<VectorHit[]> | VectorHit[], truth: (q: number) => number[]): Promise<QueryFigures> {
  for (let q = 0; q < Math.min(10, count); q++) await search(q); // warm-up: JIT, caches
  const latencies: number[] = [];
  let recallSum = 0;
  for (let q = 0; q < count; q++) {
    const startedAt = performance.now();
    const hits = await search(q);
    latencies.push(performance.now() - startedAt);
    recallSum += recall(hits.map((hit) => hit.key), truth(q));
  }
  latencies.sort((a, b) => a - b);
  return { p50_ms: round(latencies[Math.floor(count / 2)]), p95_ms: round(latencies[Math.floor(count * 0.95)]), recall_at_10: round(recallSum / count) };
}

async function insertRate(store: VectorStore, records: VectorRecord[]): Promise<number> {
  const startedAt = performance.now();
  for (let start = 0; start < records.length; start += upsertBatchRows) await store.upsert(records.slice(start, start + upsertBatchRows));
  await graphInsertsDone(store, records[0]!.collectionId);
  return Math.round(records.length / ((performance.now() - startedAt) / 1000));
}

/**
 * The embedded store's graph inserts finish after upsert returns, and a search does not wait for
 * them (it scores the rows not in the graph yet itself): the graph of the collection is asked.
 */
async function graphInsertsDone(store: VectorStore, collectionId: string): Promise<void> {
  if (!(store instanceof EmbeddedVectorStore)) return;
  const loaded = (store as unknown as { collections: Map<string, Promise<CollectionVectors>> }).collections.get(collectionId);
  await (await loaded)?.graphCurrent();
}

interface BenchDatabase {
  db: Database;
  close(): Promise<void>;
}

async function openBenchDatabase(kind: 'pglite' | 'postgresql'): Promise<BenchDatabase> {
  if (kind === 'pglite') {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-bench-'));
    const db = await openDatabase({ dataDir: path.join(directory, 'pgdata') });
    return { db, close: async () => (await db.close(), await rm(directory, { recursive: true, force: true })) };
  }
  const name = `rs_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (statement: string): Promise<void> => {
    const client = new pg.Client({ connectionString: args['database-url'] });
    await client.connect();
    await client.query(statement).finally(() => client.end());
  };
  await admin(`create database ${name}`);
  const url = new URL(args['database-url']!);
  url.pathname = `/${name}`;
  const db = await openDatabase({ databaseUrl: url.toString() });
  return { db, close: async () => (await db.close(), await admin(`drop database if exists ${name} with (force)`)) };
}

// ---------- 1. usearch settings ----------

const loadAtStart = os.loadavg();
log('exact ground truth');
const truthAll = exactTruth(rowCount);
const annSweep: Array<AnnSettings & { insert_per_s: number } & QueryFigures> = [];
/** Graphs of the CollectionVectors this script builds directly (the stores have their own). */
const graphs = new GraphThread();
for (const settings of [
  { connectivity: 16, expansionAdd: 128, expansionSearch: 64, quantization: 'f32' },
  { connectivity: 16, expansionAdd: 64, expansionSearch: 64, quantization: 'f32' },
  { connectivity: 16, expansionAdd: 128, expansionSearch: 64, quantization: 'f16' },
  { connectivity: 16, expansionAdd: 64, expansionSearch: 64, quantization: 'f16' },
  { connectivity: 16, expansionAdd: 64, expansionSearch: 96, quantization: 'f16' },
] satisfies AnnSettings[]) {
  log(`usearch sweep ${JSON.stringify(settings)}`);
  const vectors = new CollectionVectors(dimension, graphs, settings);
  const startedAt = performance.now();
  for (let start = 0; start < rowCount; start += upsertBatchRows) {
    vectors.upsert(recordsOf('sweep', start, Math.min(rowCount, start + upsertBatchRows)));
  }
  await vectors.graphCurrent();
  const insertPerSecond = Math.round(rowCount / ((performance.now() - startedAt) / 1000));
  const figures = await measureQueries(
    queryCount,
    async (q) => {
      const found = await vectors.approximateNearest(normalised(rowOf(queries, q)), topK, topK);
      if (found === null) throw new Error('the graph could not answer');
      return found.hits;
    },
    (q) => truthAll[q],
  );
  annSweep.push({ ...settings, insert_per_s: insertPerSecond, ...figures });
}

// ---------- 2. the embedded store on PGlite at full size ----------

log(`embedded store on PGlite: inserting ${rowCount}`);
const embeddedDatabase = await openBenchDatabase('pglite');
const embeddedSql = createSqlRunner(embeddedDatabase.db);
let embeddedStore = new EmbeddedVectorStore(embeddedSql);
const mainCollection = randomUUID();
await embeddedStore.ensureCollection(mainCollection, dimension);
const embeddedInsertPerSecond = await insertRate(embeddedStore, recordsOf(mainCollection, 0, rowCount));
const persistOnlyCollection = randomUUID();
const persistStartedAt = performance.now();
const table = new EmbeddedVectorTable(embeddedSql);
for (let start = 0; start < comparisonRows; start += upsertBatchRows) {
  await table.upsert(persistOnlyCollection, recordsOf(persistOnlyCollection, start, Math.min(comparisonRows, start + upsertBatchRows), 100_000_000));
}
const persistOnlyPerSecond = Math.round(comparisonRows / ((performance.now() - persistStartedAt) / 1000));
await table.deleteCollection(persistOnlyCollection);

const searchMain = (q: number, extra: { tenant?: string; filter?: MetadataFilter } = {}) =>
  embeddedStore.search({ collectionId: mainCollection, embedding: rowOf(queries, q), topK, ...extra });
log('embedded store: queries');
const embeddedUnfiltered = await measureQueries(queryCount, (q) => searchMain(q), (q) => truthAll[q]);
const filteredTruth = (allowed: (row: number) => boolean) => {
  const truths = Array.from({ length: filteredQueryCount }, (_, q) => exactAllowedTruth(rowOf(queries, q), rowCount, allowed));
  return (q: number) => truths[q];
};
const embeddedTenant = await measureQueries(filteredQueryCount, (q) => searchMain(q, { tenant: 'tenant-3' }), filteredTruth((row) => tenantOf(row) === 'tenant-3'));
const embeddedLang = await measureQueries(filteredQueryCount, (q) => searchMain(q, { filter: parseFilter({ lang: 'en' }) }), filteredTruth((row) => row % 4 === 0));

log('embedded store: restart');
await embeddedStore.close();
embeddedStore = new EmbeddedVectorStore(embeddedSql);
const rebuildStartedAt = performance.now();
await embeddedStore.ensureCollection(mainCollection, dimension);
// Searchable once the rows are placed; the graph is rebuilt behind (searches scan exactly meanwhile).
const searchableSeconds = round((performance.now() - rebuildStartedAt) / 1000, 1);
await graphInsertsDone(embeddedStore, mainCollection);
const rebuildSeconds = round((performance.now() - rebuildStartedAt) / 1000, 1);
const afterRestart = await measureQueries(queryCount, (q) => searchMain(q), (q) => truthAll[q]);
await embeddedStore.close();
await embeddedDatabase.close();

// ---------- 3. thresholds: exact scan vs HNSW + post-filter, by selectivity ----------

log('threshold study');
// Tenants here are bucket ranges, so a tenant and a filter of the same selectivity can be compared.
const selectivityRanges: Array<[percent: number, low: number, high: number]> = [[1, 0, 1], [2, 1, 3], [5, 3, 8], [10, 8, 18], [20, 18, 38], [50, 38, 88]];
const studyTenantOf = (row: number): string => {
  const range = selectivityRanges.find(([, low, high]) => row % 100 >= low && row % 100 < high);
  return range ? `share-${range[0]}` : 'rest';
};
const studyVectors = new CollectionVectors(dimension, graphs);
for (let start = 0; start < rowCount; start += upsertBatchRows) {
  studyVectors.upsert(recordsOf('study', start, Math.min(rowCount, start + upsertBatchRows)).map((record, i) => ({ ...record, tenant: studyTenantOf(start + i) })));
}
const forcedExact: SearchThresholds = { ...defaultSearchThresholds, exactTenantScanMaxRows: Number.MAX_SAFE_INTEGER, exactScanMaxFraction: 1 };
const forcedApproximate: SearchThresholds = { ...defaultSearchThresholds, exactSearchBelow: 0, exactTenantScanMaxRows: 0, exactScanMaxFraction: 0, exactScanAwaitingShare: Number.POSITIVE_INFINITY };
const thresholdStudy = [];
for (const [percent, low, high] of selectivityRanges) {
  const truth = filteredTruth((row) => row % 100 >= low && row % 100 < high);
  const restrictions = {
    tenant: { tenant: `share-${percent}`, filter: null },
    filter: { tenant: null, filter: parseFilter({ $and: [{ bucket: { $gte: low } }, { bucket: { $lt: high } }] })! },
  };
  for (const [restriction, { tenant, filter }] of Object.entries(restrictions)) {
    const run = (thresholds: SearchThresholds) =>
      measureQueries(filteredQueryCount, (q) => searchCollectionVectors(studyVectors, { unitQuery: normalised(rowOf(queries, q)), topK, tenant, filter }, thresholds), truth);
    thresholdStudy.push({
      restriction,
      selectivity_percent: percent,
      allowed_rows: Math.round((rowCount * percent) / 100),
      exact_scan: await run(forcedExact),
      hnsw_post_filter: await run(forcedApproximate),
      chosen: await run(defaultSearchThresholds),
    });
  }
}
const exactAllBySize = [];
for (const size of [1_000, 2_000, 5_000, 20_000, rowCount]) {
  const prefix = new CollectionVectors(dimension, graphs);
  prefix.upsert(recordsOf('prefix', 0, size).map((record) => ({ ...record, tenant: null })));
  const figures = await measureQueries(queryCount, (q) => prefix.exactSearch(normalised(rowOf(queries, q)), topK, undefined), () => []);
  exactAllBySize.push({ rows: size, p50_ms: figures.p50_ms, p95_ms: figures.p95_ms });
}

// ---------- 4. comparison at comparisonRows ----------

const truthComparison = exactTruth(comparisonRows);
const comparisonTenantTruth = (() => {
  const truths = Array.from({ length: filteredQueryCount }, (_, q) => exactAllowedTruth(rowOf(queries, q), comparisonRows, (row) => tenantOf(row) === 'tenant-3'));
  return (q: number) => truths[q];
})();
const comparison = [];
const backends: Array<'pglite' | 'postgresql'> = args['skip-postgresql'] ? ['pglite'] : ['pglite', 'postgresql'];
for (const backend of backends) {
  for (const storeName of ['embedded', 'pgvector'] as const) {
    log(`comparison: ${storeName} on ${backend}`);
    const database = await openBenchDatabase(backend);
    const sql = createSqlRunner(database.db);
    const store: VectorStore = storeName === 'embedded' ? new EmbeddedVectorStore(sql) : new PgvectorStore(sql);
    // Rows inserted one batch at a time with the collection's index in place.
    const indexed = randomUUID();
    await store.ensureCollection(indexed, dimension);
    const indexedRows = storeName === 'pgvector' ? indexedInsertRows : comparisonRows;
    const indexedInsertPerSecond = await insertRate(store, recordsOf(indexed, 0, indexedRows));
    await store.dropCollection(indexed);
    // pgvector's bulk path: rows first, then ensureCollection builds the HNSW index over them.
    const collectionId = randomUUID();
    const bulkInsertPerSecond = storeName === 'pgvector' ? await insertRate(store, recordsOf(collectionId, 0, comparisonRows)) : null;
    const buildStartedAt = performance.now();
    await store.ensureCollection(collectionId, dimension);
    if (storeName === 'embedded') await insertRate(store, recordsOf(collectionId, 0, comparisonRows));
    const indexBuildSeconds = storeName === 'pgvector' ? round((performance.now() - buildStartedAt) / 1000, 1) : null;
    const search = (q: number, tenant?: string) => store.search({ collectionId, embedding: rowOf(queries, q), topK, tenant });
    comparison.push({
      store: storeName,
      database: backend,
      rows: comparisonRows,
      insert_per_s_index_present: indexedInsertPerSecond,
      insert_rows_measured: indexedRows,
      bulk_insert_per_s_before_index: bulkInsertPerSecond,
      index_build_s: indexBuildSeconds,
      unfiltered: await measureQueries(queryCount, (q) => search(q), (q) => truthComparison[q]),
      tenant_5_percent: await measureQueries(filteredQueryCount, (q) => search(q, 'tenant-3'), comparisonTenantTruth),
    });
    await store.close();
    await database.close();
  }
}

// ---------- report ----------

const result = {
  benchmark: 'vector-stores',
  date: new Date().toISOString(),
  machine: { node: process.version, cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model ?? 'unknown', load_average_start: loadAtStart.map((v) => round(v, 1)), load_average_end: os.loadavg().map((v) => round(v, 1)) },
  data: { rows: rowCount, dimension, clusters: clusterCount, noise: 'unit Gaussian around N(0,1) centres', queries: queryCount, filtered_queries: filteredQueryCount, top_k: topK, upsert_batch_rows: upsertBatchRows },
  usearch_sweep: annSweep,
  embedded_pglite: {
    rows: rowCount,
    insert_per_s_with_persistence: embeddedInsertPerSecond,
    persistence_only_per_s: persistOnlyPerSecond,
    unfiltered: embeddedUnfiltered,
    tenant_5_percent: embeddedTenant,
    filter_lang_en_25_percent: embeddedLang,
    searchable_after_restart_s: searchableSeconds,
    rebuild_after_restart_s: rebuildSeconds,
    unfiltered_after_restart: afterRestart,
  },
  threshold_study: { thresholds: defaultSearchThresholds, by_selectivity: thresholdStudy, exact_scan_all_rows: exactAllBySize },
  comparison,
  targets: {
    insert_per_s: { target: 5_000, measured: embeddedInsertPerSecond, met: embeddedInsertPerSecond >= 5_000 },
    query_p50_ms: { target: 1, measured: embeddedUnfiltered.p50_ms, met: embeddedUnfiltered.p50_ms <= 1 },
    recall_at_10: { target: 0.9, measured: embeddedUnfiltered.recall_at_10, met: embeddedUnfiltered.recall_at_10 >= 0.9 },
  },
};
await mkdir(path.dirname(resultPath), { recursive: true });
await writeFile(resultPath, `${JSON.stringify(result, null, 2)}\n`);
await graphs.close();
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
