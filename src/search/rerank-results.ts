import type { CollectionRecord } from '../db/entities/index.js';
import type { Reranker } from '../plugins.js';
import type { QueryResult, QueryTimings } from './collection-query.js';

/**
 * First-stage results a reranker reads: three times `top_k`, at least 30 (so that a good passage
 * ranked 25th can still rise), at most 100 unless `top_k` itself is larger (remote rerankers bill
 * and slow down per candidate).
 */
function candidateCount(topK: number): number {
  return Math.max(topK, Math.min(Math.max(topK * 3, 30), 100));
}

/** `rerank` of the request (spec 2.6) wins over the collection's `reranking_enabled`. */
export function rerankRequested(collection: CollectionRecord, rerank: boolean | undefined): boolean {
  return rerank ?? collection.rerankingEnabled;
}

/** How many first-stage results the query keeps: `top_k`, or more when they are going to be reranked. */
export function firstStageCount(reranking: boolean, topK: number): number {
  return reranking ? candidateCount(topK) : topK;
}

/**
 * Reorders the first-stage results by the collection's reranker and keeps `top_k`. Each result's
 * `score` becomes the reranker's score, which is what the order now follows (and what `min_score`
 * then applies to); `scores.rerank` repeats it beside the first-stage scores.
 */
export async function rerankResults(
  runtime: { rerankerFor(collection: CollectionRecord): Reranker },
  collection: CollectionRecord,
  query: string,
  results: QueryResult[],
  topK: number,
  timings: QueryTimings,
): Promise<QueryResult[]> {
  const started = performance.now();
  const scores = await runtime.rerankerFor(collection).rerank(query, results.map((result) => ({ id: result.id, text: result.text })));
  timings.rerank_ms = Math.round((performance.now() - started) * 100) / 100;
  return results
    .map((result, index) => ({ result, index, score: scores[index]! }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, topK)
    .map(({ result, score }) => ({ ...result, score, scores: { ...result.scores, rerank: score } }));
}
