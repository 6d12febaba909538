/**
 * LanceDB (embedded, in this process) over the same chunk texts and the same vectors (the
 * service's local embedder): an HNSW_SQ cosine index on `vector`, an FTS (BM25) index on `text`,
 * and hybrid search fused by RRF with k = 60. Query time includes embedding the query, as the
 * service's does.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type * as LanceDb from '@lancedb/lancedb';
import type * as Arrow from 'apache-arrow';
import usearch, { type BatchMatches } from 'usearch';
import type { EmbeddingModel } from '../../src/plugins.js';
import { summarize, type LatencySummary } from './harness.js';

// The CommonJS build, i.e. the very module instance @lancedb/lancedb itself requires.
const arrow = createRequire(import.meta.url)('apache-arrow') as typeof Arrow;

export interface ChunkRows {
  keys: number[];
  ids: string[];
  texts: string[];
}

const ADD_BATCH_ROWS = 10_000;

function arrowBatch(keys: number[], texts: string[], vectors: Float32Array, dimension: number): Arrow.Table {
  const child = arrow.makeData({ type: new arrow.Float32(), length: keys.length * dimension, data: vectors });
  const listType = new arrow.FixedSizeList(dimension, new arrow.Field('item', new arrow.Float32(), true));
  const vectorData = arrow.makeData({ type: listType, length: keys.length, nullCount: 0, child });
  return new arrow.Table({
    key: arrow.makeVector(Int32Array.from(keys)),
    text: arrow.vectorFromArray(texts, new arrow.Utf8()),
    vector: arrow.makeVector(vectorData),
  });
}

export interface LanceResult {
  rows: number;
  embed_seconds: number;
  append_rows_per_s: number;
  vector_index: string;
  vector_index_build_s: number;
  fts_index_build_s: number;
  /** One client, top 10, query embedding included. */
  semantic: LatencySummary;
  keyword: LatencySummary;
  hybrid: LatencySummary;
  /** Hybrid with 50-deep lists (the service's fusion depth), then the top 10. */
  hybrid_depth_50: LatencySummary;
  query_embedding_p50_ms: number;
  /** Top-10 ids per mode, query by query (the first `count` queries of the list, in order). */
  result_ids: { semantic: string[][]; keyword: string[][]; hybrid: string[][] };
  /**
   * recall@10 of a list of result ids (query by query, same order) against the exact cosine top 10
   * over every row (usearch exactSearch), counting ties: a returned id whose cosine equals or beats
   * the exact 10th best counts as a hit (the hashed embedder gives many equal scores).
   */
  recall: (ids: string[][]) => number;
}

export async function benchmarkLance(rows: ChunkRows, model: EmbeddingModel, queries: string[], count: number, warmup: number): Promise<LanceResult> {
  // Read once by the native module when it loads: keeps its scanner deprecation warnings quiet.
  process.env.LANCEDB_LOG ??= 'error';
  const lancedb = await import('@lancedb/lancedb');
  const dimension = model.dimension;
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-bench-lance-'));
  try {
    const connection = await lancedb.connect(directory);
    let table: LanceDb.Table | undefined;
    let embedMs = 0;
    // Every vector, kept for the exact top-10 that recall is measured against.
    const matrix = new Float32Array(rows.keys.length * dimension);
    let appendMs = 0;
    for (let start = 0; start < rows.keys.length; start += ADD_BATCH_ROWS) {
      const keys = rows.keys.slice(start, start + ADD_BATCH_ROWS);
      const texts = rows.texts.slice(start, start + ADD_BATCH_ROWS);
      const embedStart = performance.now();
      const flat = new Float32Array(keys.length * dimension);
      const { vectors } = await model.embed(texts, 'document');
      vectors.forEach((values, row) => flat.set(values, row * dimension));
      matrix.set(flat, start * dimension);
      embedMs += performance.now() - embedStart;
      const appendStart = performance.now();
      const batch = arrowBatch(keys, texts, flat, dimension);
      if (!table) table = await connection.createTable('chunks', batch);
      else await table.add(batch);
      appendMs += performance.now() - appendStart;
    }
    if (!table) throw new Error('no rows for LanceDB');

    let started = performance.now();
    await table.createIndex('vector', {
      config: lancedb.Index.hnswSq({ distanceType: 'cosine', numPartitions: 1, m: 16, efConstruction: 128 }),
    });
    const vectorIndexSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    await table.createIndex('text', {
      config: lancedb.Index.fts({ withPosition: false, stem: true, removeStopWords: true, language: 'English', lowercase: true, asciiFolding: true }),
    });
    const ftsIndexSeconds = (performance.now() - started) / 1000;
    const reranker = await lancedb.rerankers.RRFReranker.create(60);
    const columns = ['key', 'text'];

    const embedQuery = async (query: string) => Float32Array.from((await model.embed([query], 'query')).vectors[0]!);
    type Runner = (query: string) => Promise<Array<Record<string, unknown>>>;
    const lanceTable = table;
    const runners: Record<'semantic' | 'keyword' | 'hybrid' | 'hybrid_depth_50', Runner> = {
      semantic: async (query) => lanceTable.query().nearestTo(await embedQuery(query)).distanceType('cosine').ef(64).select(columns).limit(10).toArray(),
      keyword: async (query) => lanceTable.query().fullTextSearch(query).select(columns).limit(10).toArray(),
      hybrid: async (query) => lanceTable.query().nearestTo(await embedQuery(query)).distanceType('cosine').ef(64)
        .fullTextSearch(query).rerank(reranker).select(columns).limit(10).toArray(),
      hybrid_depth_50: async (query) => (await lanceTable.query().nearestTo(await embedQuery(query)).distanceType('cosine').ef(64)
        .fullTextSearch(query).rerank(reranker).select(columns).limit(50).toArray()).slice(0, 10),
    };
    const idOfKey = new Map(rows.keys.map((key, index) => [key, rows.ids[index]!]));
    const summaries: Partial<Record<keyof typeof runners, LatencySummary>> = {};
    const resultIds: LanceResult['result_ids'] = { semantic: [], keyword: [], hybrid: [] };
    for (const [mode, run] of Object.entries(runners) as Array<[keyof typeof runners, Runner]>) {
      const latencies: number[] = [];
      const ids: string[][] = [];
      for (let index = -warmup; index < count; index++) {
        const query = queries[((index % queries.length) + queries.length) % queries.length]!;
        const queryStart = performance.now();
        const results = await run(query);
        const milliseconds = performance.now() - queryStart;
        if (index < 0) continue;
        latencies.push(milliseconds);
        ids.push(results.map((row) => idOfKey.get(Number(row.key)) ?? String(row.key)));
      }
      summaries[mode] = summarize(latencies);
      if (mode !== 'hybrid_depth_50') resultIds[mode] = ids;
    }
    const embeddingLatencies: number[] = [];
    for (let index = 0; index < Math.min(count, 200); index++) {
      const queryStart = performance.now();
      await embedQuery(queries[index % queries.length]!);
      embeddingLatencies.push(performance.now() - queryStart);
    }
    connection.close();
    const queryMatrix = new Float32Array(count * dimension);
    for (let index = 0; index < count; index++) queryMatrix.set(await embedQuery(queries[index % queries.length]!), index * dimension);
    const exact = usearch.exactSearch(matrix, queryMatrix, dimension, 10, usearch.MetricKind.Cos, 0) as BatchMatches;
    const rowOfId = new Map(rows.ids.map((id, row) => [id, row]));
    const cosine = (query: number, row: number) => {
      let dot = 0;
      let queryNorm = 0;
      let rowNorm = 0;
      for (let d = 0; d < dimension; d++) {
        const a = queryMatrix[query * dimension + d]!;
        const b = matrix[row * dimension + d]!;
        dot += a * b;
        queryNorm += a * a;
        rowNorm += b * b;
      }
      return dot / Math.sqrt(queryNorm * rowNorm || 1);
    };
    const tenthBest = Array.from({ length: count }, (_, query) => {
      const rowsOfQuery = Array.from(exact.get(query).keys, Number);
      return Math.min(...rowsOfQuery.map((row) => cosine(query, row)));
    });
    const recall = (lists: string[][]) => {
      let total = 0;
      const queriesCounted = Math.min(count, lists.length);
      for (let query = 0; query < queriesCounted; query++) {
        const hits = lists[query]!.filter((id) => {
          const row = rowOfId.get(id);
          return row !== undefined && cosine(query, row) >= tenthBest[query]! - 1e-5;
        }).length;
        total += Math.min(10, hits) / 10;
      }
      return Number((total / Math.max(1, queriesCounted)).toFixed(3));
    };
    return {
      rows: rows.keys.length,
      embed_seconds: Number((embedMs / 1000).toFixed(2)),
      append_rows_per_s: Math.round(rows.keys.length / (appendMs / 1000)),
      vector_index: 'HNSW_SQ cosine, 1 partition, m 16, ef_construction 128; query ef 64',
      vector_index_build_s: Number(vectorIndexSeconds.toFixed(2)),
      fts_index_build_s: Number(ftsIndexSeconds.toFixed(2)),
      semantic: summaries.semantic!,
      keyword: summaries.keyword!,
      hybrid: summaries.hybrid!,
      hybrid_depth_50: summaries.hybrid_depth_50!,
      query_embedding_p50_ms: summarize(embeddingLatencies).p50,
      result_ids: resultIds,
      recall,
    };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
