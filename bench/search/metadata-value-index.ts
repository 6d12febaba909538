/**
 * The embedded store's index of metadata values (plugins/vector-store/embedded/metadata-value-index.ts),
 * in memory, on clustered 384-dim vectors: for `$in` and range filters of growing selectivity, the latency
 * and recall of answering from the index's candidate rows against the exact scan and the HNSW graph
 * with post-filtering (what the store chose before the index), at top 10 and top 50 (hybrid's vector
 * list is 50 deep). It chose `indexedCandidatesScale`. Also: the first filter on a path (indexing it),
 * and what keeping one path indexed adds to a write. `before_the_index` is the store with the index
 * off: its sample of evenly spaced rows sees every tenth bucket only here (bucket = row % 1000), so
 * its estimates of these filters are off by up to 10x; compare with `exact_scan` and
 * `hnsw_post_filter`.
 *
 * Usage: npx tsx bench/search/metadata-value-index.ts [--rows 100000] [--queries 50]
 * Writes bench/results/metadata-value-index.json.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CollectionVectors, type StoredVector } from '../../plugins/vector-store/embedded/collection-vectors.js';
import { defaultSearchThresholds, searchCollectionVectors, type SearchThresholds } from '../../plugins/vector-store/embedded/filtered-search.js';
import { GraphThread } from '../../plugins/vector-store/embedded/graph-thread.js';
import { normalised } from '../../plugins/vector-store/embedded/row-block.js';
import { parseFilter } from '../../src/search/filters/parse-filter.js';
import { machineDescription, writeResult } from '../support/service-process.js';
import { clusteredVectorSource } from './clustered-vectors.js';
import { summarize } from './harness.js';

const { values: args } = parseArgs({ options: { rows: { type: 'string', default: '100000' }, queries: { type: 'string', default: '50' } } });
const rowCount = Number(args.rows);
const queryCount = Number(args.queries);
const dimension = 384;
const buckets = 1_000;
const resultPath = fileURLToPath(new URL('../results/metadata-value-index.json', import.meta.url));
const log = (message: string): void => void process.stderr.write(`[metadata-value-index] ${message}\n`);

const clusteredVectors = clusteredVectorSource({ seed: 20_261_129, dimension, clusterCount: 100 });
const data = clusteredVectors(rowCount);
const queries = clusteredVectors(queryCount);
const rowOf = (matrix: Float32Array, row: number): Float32Array => matrix.subarray(row * dimension, (row + 1) * dimension);
/** bucket is uniform and independent of the cluster: `bucket in [0, m)` lets m / 1000 of the rows pass. */
const storedRows = (): StoredVector[] =>
  Array.from({ length: rowCount }, (_, row) => ({ key: row + 1, embedding: rowOf(data, row), tenant: null, metadata: { bucket: row % buckets, lang: ['en', 'fr'][row % 2] } }));

const graphs = new GraphThread();
const vectors = new CollectionVectors(dimension, graphs);
const rows = storedRows();
for (let start = 0; start < rowCount; start += 1_000) vectors.upsert(rows.slice(start, start + 1_000));
await vectors.graphCurrent();
log(`${rowCount} rows in the graph`);

const bucketFilter = (passing: number) => parseFilter({ bucket: { $in: Array.from({ length: passing }, (_, bucket) => bucket) } })!;
const started = performance.now();
vectors.filterCandidates(bucketFilter(1));
const firstFilterMs = performance.now() - started;

const thresholdsOf: Record<string, SearchThresholds> = {
  index: { ...defaultSearchThresholds, indexedCandidatesScale: Number.MAX_SAFE_INTEGER },
  before_the_index: { ...defaultSearchThresholds, indexedCandidatesScale: 0 },
  exact_scan: { ...defaultSearchThresholds, indexedCandidatesScale: 0, exactScanMaxFraction: 1 },
  hnsw_post_filter: { ...defaultSearchThresholds, indexedCandidatesScale: 0, exactSearchBelow: 0, exactScanMaxFraction: 0, exactScanAwaitingShare: Number.POSITIVE_INFINITY },
  chosen: defaultSearchThresholds,
};

const studies = [];
const bucketRange = (passing: number) => parseFilter({ bucket: { $lt: passing } })!;
const shapes = [
  ...[1, 5, 10, 15, 20, 30, 50, 100].map((passingBuckets) => ({ shape: '$in', passingBuckets, filter: bucketFilter(passingBuckets) })),
  ...[1, 10, 50].map((passingBuckets) => ({ shape: 'range', passingBuckets, filter: bucketRange(passingBuckets) })),
];
for (const { shape, passingBuckets, filter } of shapes) {
  for (const topK of [10, 50]) {
    const search = (q: number, thresholds: SearchThresholds) =>
      searchCollectionVectors(vectors, { unitQuery: normalised(rowOf(queries, q)), topK, tenant: null, filter }, thresholds);
    const truth = await Promise.all(Array.from({ length: queryCount }, (_, q) => search(q, thresholdsOf.exact_scan!)));
    const figures: Record<string, unknown> = {};
    for (const [name, thresholds] of Object.entries(thresholdsOf)) {
      for (let q = 0; q < Math.min(5, queryCount); q++) await search(q, thresholds);
      const milliseconds: number[] = [];
      let found = 0;
      for (let q = 0; q < queryCount; q++) {
        const queryStarted = performance.now();
        const hits = await search(q, thresholds);
        milliseconds.push(performance.now() - queryStarted);
        const expected = new Set(truth[q]!.map((hit) => hit.key));
        found += hits.filter((hit) => expected.has(hit.key)).length / Math.max(expected.size, 1);
      }
      const { p50, p95 } = summarize(milliseconds);
      figures[name] = { p50_ms: p50, p95_ms: p95, recall: Number((found / queryCount).toFixed(3)) };
    }
    const passingRows = Math.round((rowCount * passingBuckets) / buckets);
    log(`${shape}: ${passingRows} rows pass, top ${topK}: ${JSON.stringify(figures)}`);
    studies.push({ filter: shape, passing_rows: passingRows, passing_percent: (100 * passingBuckets) / buckets, top_k: topK, ...figures });
  }
}

log('writes with and without an indexed path');
// A write with one path indexed against none, rows placed without the graph (the index's share alone).
const writeMs: Record<string, number> = {};
for (const indexed of [false, true, false, true]) {
  const fresh = new CollectionVectors(dimension, graphs);
  if (indexed) fresh.filterCandidates(bucketFilter(1));
  const writeStarted = performance.now();
  for (let start = 0; start < rowCount; start += 1_000) fresh.upsert(rows.slice(start, start + 1_000), { graph: false });
  const name = indexed ? 'one_path_indexed_us_per_row' : 'no_path_indexed_us_per_row';
  writeMs[name] = Math.min(writeMs[name] ?? Number.POSITIVE_INFINITY, Number((((performance.now() - writeStarted) * 1000) / rowCount).toFixed(2)));
  fresh.dispose();
}

await writeResult(resultPath, {
  measured_at: new Date().toISOString(),
  machine: machineDescription(),
  data: { rows: rowCount, dimension, clusters: 100, queries: queryCount, filters: '$in: {"bucket": {"$in": [0 .. m-1]}}; range: {"bucket": {"$lt": m}}; bucket = row % 1000' },
  defaults: { indexedCandidatesScale: defaultSearchThresholds.indexedCandidatesScale },
  first_filter_on_a_path_ms: Number(firstFilterMs.toFixed(1)),
  write: writeMs,
  studies,
});
log(`written to ${resultPath}`);
await graphs.close();
