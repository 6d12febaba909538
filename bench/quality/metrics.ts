/**
 * Ranking metrics, computed the way /work/shared/tools/bm25_eval.py (and trec_eval /
 * pytrec_eval) compute them, so figures from different benchmarks are comparable.
 */

/** Graded judgements of one query: document id → relevance (> 0 is relevant). */
export type Judgements = ReadonlyMap<string, number>;

/**
 * nDCG@k with linear gain (the grade itself, not 2^grade - 1) and a log2(rank + 1) discount;
 * the ideal ranking is the judged grades sorted descending. 0 when nothing is relevant.
 */
export function ndcgAtK(ranked: readonly string[], judgements: Judgements, k: number): number {
  let dcg = 0;
  ranked.slice(0, k).forEach((id, rank) => {
    const grade = judgements.get(id) ?? 0;
    if (grade > 0) dcg += grade / Math.log2(rank + 2);
  });
  const ideal = [...judgements.values()]
    .filter((grade) => grade > 0)
    .sort((a, b) => b - a)
    .slice(0, k);
  const idealDcg = ideal.reduce((sum, grade, rank) => sum + grade / Math.log2(rank + 2), 0);
  return idealDcg > 0 ? dcg / idealDcg : 0;
}

/** Share of the relevant (grade > 0) documents found in the top k. 0 when nothing is relevant. */
export function recallAtK(ranked: readonly string[], judgements: Judgements, k: number): number {
  const relevant = new Set([...judgements].filter(([, grade]) => grade > 0).map(([id]) => id));
  if (relevant.size === 0) return 0;
  const found = new Set(ranked.slice(0, k).filter((id) => relevant.has(id)));
  return found.size / relevant.size;
}
