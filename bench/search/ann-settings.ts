/**
 * HNSW settings on the vectors users of the built-in embedder get: the search benchmark's corpus
 * (bench/search/corpus.ts), chunked as the service chunks it (800 / 100) and embedded with the
 * `local` embedder, against the search benchmark's queries. For each expansion_add ×
 * expansion_search (connectivity 16, f16 graph copy, as in the embedded store): graph build time,
 * and one query at a time its p50 and recall@10 against exact cosine (ties at the 10th score count
 * as hits). bench/search/vector-stores.ts sweeps the same settings on clustered vectors, where
 * recall is easier.
 *
 * Usage: npx tsx bench/search/ann-settings.ts [--chunks 10000,100000] [--queries 300]
 * Writes bench/results/ann-settings.json.
 */
import { parseArgs } from 'node:util';
import usearch from 'usearch';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';
import { normalised } from '../../plugins/vector-store/embedded/row-block.js';
import { parsePlainText } from '../../plugins/parser/text/index.js';
import { chunkElements } from '../../src/chunking/chunk-elements.js';
import { machineDescription, writeResult } from '../support/service-process.js';
import { benchmarkQueries, documentText } from './corpus.js';

const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: '10000,100000' },
    queries: { type: 'string', default: '300' },
  },
});
const scales = args.chunks.split(',').map(Number);
const queryCount = Number(args.queries);
const DIMENSION = 384;
const EXPANSION_ADD = [64, 128];
const EXPANSION_SEARCH = [64, 96, 128, 192];
const model = localEmbeddingPlugin.create({}, {});
const round = (value: number, digits = 3) => Number(value.toFixed(digits));

/** Unit rows of the first `count` chunks of the corpus, in one matrix. */
async function corpusRows(count: number): Promise<Float32Array> {
  const texts: string[] = [];
  for (let document = 0; texts.length < count; document++) {
    const chunks = chunkElements(parsePlainText(documentText(document)).elements, { chunkSize: 800, chunkOverlap: 100, strategy: 'recursive' });
    for (const chunk of chunks) if (texts.length < count) texts.push(chunk.text);
  }
  const matrix = new Float32Array(count * DIMENSION);
  for (let start = 0; start < count; start += 2048) {
    const { vectors } = await model.embed(texts.slice(start, start + 2048), 'document');
    vectors.forEach((vector, offset) => matrix.set(normalised(Float32Array.from(vector)), (start + offset) * DIMENSION));
  }
  return matrix;
}

/** Per query: every row's cosine, and the 10th best (minus rounding) as the hit threshold. */
function exactTruth(matrix: Float32Array, queries: Float32Array[]): Array<{ scores: Float32Array; cutoff: number }> {
  const rows = matrix.length / DIMENSION;
  return queries.map((query) => {
    const scores = new Float32Array(rows);
    for (let row = 0; row < rows; row++) {
      let dot = 0;
      for (let d = 0; d < DIMENSION; d++) dot += query[d]! * matrix[row * DIMENSION + d]!;
      scores[row] = dot;
    }
    const sorted = Float32Array.from(scores).sort();
    return { scores, cutoff: sorted[rows - 10]! - 1e-6 };
  });
}

const queryTexts = benchmarkQueries(queryCount);
const queries = (await model.embed(queryTexts, 'query')).vectors.map((vector) => normalised(Float32Array.from(vector)));
const results = [];
for (const count of scales) {
  const matrix = await corpusRows(count);
  const keys = BigUint64Array.from({ length: count }, (_, row) => BigInt(row));
  const truth = exactTruth(matrix, queries);
  for (const expansionAdd of EXPANSION_ADD) {
    for (const expansionSearch of EXPANSION_SEARCH) {
      const index = new usearch.Index({
        dimensions: DIMENSION, metric: usearch.MetricKind.Cos, quantization: usearch.ScalarKind.F16,
        connectivity: 16, expansion_add: expansionAdd, expansion_search: expansionSearch, multi: false,
      });
      const buildStarted = performance.now();
      // As the graph thread adds a large batch: usearch's own threads.
      index.add(keys, matrix, 0);
      const buildSeconds = (performance.now() - buildStarted) / 1000;
      for (let q = 0; q < Math.min(20, queries.length); q++) index.search(queries[q]!, 10, 1);
      const latencies: number[] = [];
      let hits = 0;
      for (let q = 0; q < queries.length; q++) {
        const started = performance.now();
        const matches = index.search(queries[q]!, 10, 1);
        latencies.push(performance.now() - started);
        for (const key of matches.keys) if (truth[q]!.scores[Number(key)]! >= truth[q]!.cutoff) hits++;
      }
      latencies.sort((a, b) => a - b);
      const result = {
        chunks: count, expansion_add: expansionAdd, expansion_search: expansionSearch, build_s: round(buildSeconds, 2),
        recall_at_10: round(hits / (queries.length * 10)), p50_ms: round(latencies[Math.floor(latencies.length / 2)]!), p95_ms: round(latencies[Math.floor(latencies.length * 0.95)]!),
      };
      results.push(result);
      process.stderr.write(`${JSON.stringify(result)}\n`);
    }
  }
}
await writeResult('bench/results/ann-settings.json', {
  benchmark: 'ann-settings', date: new Date().toISOString(), machine: machineDescription(),
  settings: { dimension: DIMENSION, connectivity: 16, quantization: 'f16', queries: queryCount, embedder: 'local', chunking: '800 / 100 recursive' },
  results,
});
