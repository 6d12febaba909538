/**
 * Semantic searches of the embedded store while its graph thread is still taking in the rows of a
 * large load, as right after a collection was ingested: `rows` clustered 384-dim vectors are
 * upserted in batches of 1,000 (the graph inserts go out and are not waited for), then one
 * unfiltered top-10 search runs every 200 ms until the graph holds every row. Each search is timed
 * with the number of rows awaiting the graph when it started; the figures are grouped by that share.
 * After catching up, 50 searches give the settled p50.
 *
 * Run: npx tsx bench/search/pending-rows-search.ts [rows=150000]
 * Writes bench/results/pending-rows-search.json (BENCH_OUT overrides).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CollectionVectors } from '../../plugins/vector-store/embedded/collection-vectors.js';
import { defaultSearchThresholds, searchCollectionVectors } from '../../plugins/vector-store/embedded/filtered-search.js';
import { GraphThread } from '../../plugins/vector-store/embedded/graph-thread.js';
import { normalised } from '../../plugins/vector-store/embedded/row-block.js';
import { machineDescription, writeResult } from '../support/service-process.js';
import { clusteredVectorSource } from './clustered-vectors.js';
import { summarize } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rowCount = Number(process.argv[2] ?? 150_000);
const out = process.env.BENCH_OUT ?? path.join(root, 'bench/results/pending-rows-search.json');
const dimension = 384;
const batchRows = 1_000;
const pauseMs = 200;
/** Upper bounds of the awaiting share groups, as fractions of the rows. */
const shareGroups = [0.01, 0.1, 0.25, 0.5, 1];

const draw = clusteredVectorSource({ seed: 7, dimension, clusterCount: 100 });
const query = () => normalised(draw(1));
const graphs = new GraphThread();
const vectors = new CollectionVectors(dimension, graphs);
const loadStarted = performance.now();
for (let start = 0; start < rowCount; start += batchRows) {
  const matrix = draw(batchRows);
  vectors.upsert(Array.from({ length: batchRows }, (_, row) => ({
    key: start + row + 1, embedding: matrix.subarray(row * dimension, (row + 1) * dimension), metadata: {}, tenant: null,
  })));
}
const loadSeconds = (performance.now() - loadStarted) / 1000;

let caughtUp = false;
const current = vectors.graphCurrent().then(() => {
  caughtUp = true;
});
const searches: Array<{ awaiting: number; ms: number }> = [];
const started = performance.now();
while (!caughtUp) {
  const awaiting = vectors.rowsAwaitingGraph;
  const searchStarted = performance.now();
  await searchCollectionVectors(vectors, { unitQuery: query(), topK: 10, tenant: null, filter: null }, defaultSearchThresholds);
  searches.push({ awaiting, ms: performance.now() - searchStarted });
  await new Promise((resolve) => setTimeout(resolve, pauseMs));
}
await current;
const catchUpSeconds = (performance.now() - started) / 1000;
const settled: number[] = [];
for (let n = 0; n < 50; n++) {
  const searchStarted = performance.now();
  await searchCollectionVectors(vectors, { unitQuery: query(), topK: 10, tenant: null, filter: null }, defaultSearchThresholds);
  settled.push(performance.now() - searchStarted);
}
await graphs.close();

const groups = shareGroups.map((upTo, index) => {
  const from = index === 0 ? 0 : shareGroups[index - 1]!;
  const inGroup = searches.filter(({ awaiting }) => awaiting > from * rowCount && awaiting <= upTo * rowCount).map(({ ms }) => ms);
  return { awaiting_share: `${from}-${upTo}`, ...(inGroup.length > 0 ? summarize(inGroup) : { count: 0 }) };
});
await writeResult(out, {
  benchmark: 'pending-rows-search', date: new Date().toISOString(), machine: machineDescription(), rows: rowCount, dimension,
  upsert_seconds: Number(loadSeconds.toFixed(1)), catch_up_seconds: Number(catchUpSeconds.toFixed(1)),
  first_search: { awaiting: searches[0]?.awaiting, ms: Number((searches[0]?.ms ?? 0).toFixed(1)) },
  by_awaiting_share: groups, settled: summarize(settled),
});
