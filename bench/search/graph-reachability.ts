/**
 * Rows an HNSW graph can no longer return, by how many threads usearch inserts on. usearch's
 * parallel `add` can leave a row stored but linked from no other row (unum-cloud/USearch#735):
 * no search finds it, however wide. Each build inserts clustered rows in requests of 1,000, as
 * the graph thread does, with the embedded store's settings, then searches every row's own
 * vector: a row missing from its own top 10 is searched again with 1,000 results, and a row
 * missing from those is counted as unreachable.
 *
 * Run: npx tsx bench/search/graph-reachability.ts [--rows 20000] [--dimension 384] [--builds 2]
 * Writes bench/results/graph-reachability.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import usearch from 'usearch';
import { defaultAnnSettings } from '../../plugins/vector-store/embedded/collection-vectors.js';
import { clusteredVectorSource } from './clustered-vectors.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '20000' },
    dimension: { type: 'string', default: '384' },
    builds: { type: 'string', default: '2' },
  },
});
const rowCount = Number(args.rows);
const dimension = Number(args.dimension);
const builds = Number(args.builds);
const requestRows = 1_000;
const wideSearch = 1_000;
const resultPath = fileURLToPath(new URL('../results/graph-reachability.json', import.meta.url));

const rows = clusteredVectorSource({ seed: 735, dimension, clusterCount: 100 })(rowCount);
for (let row = 0; row < rowCount; row++) {
  const vector = rows.subarray(row * dimension, (row + 1) * dimension);
  const length = Math.hypot(...vector);
  for (let i = 0; i < dimension; i++) vector[i]! /= length;
}
const keys = BigUint64Array.from({ length: rowCount }, (_, row) => BigInt(row));

interface Build {
  insert_threads: number;
  inserts_per_s: number;
  rows_missing_from_own_top_10: number;
  unreachable_rows: number;
}

function build(threads: number): Build {
  const index = new usearch.Index({
    dimensions: dimension,
    metric: usearch.MetricKind.Cos,
    quantization: defaultAnnSettings.quantization === 'f16' ? usearch.ScalarKind.F16 : usearch.ScalarKind.F32,
    connectivity: defaultAnnSettings.connectivity,
    expansion_add: defaultAnnSettings.expansionAdd,
    expansion_search: defaultAnnSettings.expansionSearch,
    multi: false,
  });
  const started = performance.now();
  for (let start = 0; start < rowCount; start += requestRows) {
    const end = Math.min(rowCount, start + requestRows);
    index.add(keys.subarray(start, end), rows.subarray(start * dimension, end * dimension), threads);
  }
  const seconds = (performance.now() - started) / 1000;
  let missingFromTop10 = 0;
  let unreachable = 0;
  const finds = (row: number, count: number) => Array.from(index.search(rows.subarray(row * dimension, (row + 1) * dimension), count, 1).keys, Number).includes(row);
  for (let row = 0; row < rowCount; row++) {
    if (finds(row, 10)) continue;
    missingFromTop10++;
    if (!finds(row, wideSearch)) unreachable++;
  }
  return { insert_threads: threads, inserts_per_s: Math.round(rowCount / seconds), rows_missing_from_own_top_10: missingFromTop10, unreachable_rows: unreachable };
}

const results: Build[] = [];
// Alternating, so a host that slows down mid-run weighs on both settings alike. 0: one thread per core.
for (let round = 0; round < builds; round++) {
  for (const threads of [0, 1]) {
    const result = build(threads);
    results.push(result);
    process.stderr.write(`${JSON.stringify(result)}\n`);
  }
}

const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const summary = {
  date: new Date().toISOString(),
  commit,
  host: { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length },
  usearch: JSON.parse(await readFile(fileURLToPath(new URL('../../package-lock.json', import.meta.url)), 'utf8')).packages['node_modules/usearch'].version as string,
  rows: rowCount,
  dimension,
  settings: defaultAnnSettings,
  request_rows: requestRows,
  builds: results,
};
await mkdir(path.dirname(resultPath), { recursive: true });
await writeFile(resultPath, `${JSON.stringify(summary, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
