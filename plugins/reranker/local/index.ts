/**
 * The built-in `local` reranker: offline, deterministic, free. It reads each candidate against the
 * query as a whole, which first-stage retrieval does not: BM25 weights over the candidate set
 * (terms rare among the candidates count most), how close together the query terms occur, and
 * whether they occur in the query's order. A cross-encoder understands meaning and does better;
 * this one needs no download and answers in microseconds.
 */
import type { PluginDefinition, RerankCandidate, Reranker } from '../../../src/plugins.js';
import { analyzeForIndex } from '../../../src/text/english-analyzer.js';

const K1 = 1.2;
const B = 0.75;
/** Shares of the final score: term weight, proximity, query order. */
const WEIGHTS = { terms: 0.5, proximity: 0.3, order: 0.2 };

interface AnalyzedCandidate {
  terms: string[];
  frequencies: Map<string, number>;
}

function analyze(text: string): AnalyzedCandidate {
  const terms = analyzeForIndex(text);
  const frequencies = new Map<string, number>();
  for (const term of terms) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
  return { terms, frequencies };
}

/** BM25 of the candidate, divided by the most any candidate could score, so it lies in [0, 1). */
function termScore(queryTerms: string[], idf: Map<string, number>, candidate: AnalyzedCandidate, averageLength: number): number {
  let score = 0;
  let maximum = 0;
  const lengthNorm = 1 - B + (B * candidate.terms.length) / Math.max(averageLength, 1);
  for (const term of queryTerms) {
    const weight = idf.get(term)!;
    const frequency = candidate.frequencies.get(term) ?? 0;
    score += (weight * frequency * (K1 + 1)) / (frequency + K1 * lengthNorm);
    maximum += weight * (K1 + 1);
  }
  return maximum > 0 ? score / maximum : 0;
}

/**
 * How tightly the query terms the candidate holds sit together: the shortest span holding all of
 * them, against the number of them. 1 when they are adjacent, towards 0 when scattered.
 */
function proximityScore(queryTerms: ReadonlySet<string>, candidate: AnalyzedCandidate): number {
  const wanted = new Set([...queryTerms].filter((term) => candidate.frequencies.has(term)));
  if (wanted.size === 0) return 0;
  if (wanted.size === 1) return 1 / queryTerms.size;
  const counts = new Map<string, number>();
  let covered = 0;
  let best = Number.POSITIVE_INFINITY;
  let left = 0;
  for (let right = 0; right < candidate.terms.length; right++) {
    const term = candidate.terms[right]!;
    if (!wanted.has(term)) continue;
    counts.set(term, (counts.get(term) ?? 0) + 1);
    if (counts.get(term) === 1) covered += 1;
    while (covered === wanted.size) {
      best = Math.min(best, right - left + 1);
      const leaving = candidate.terms[left]!;
      if (wanted.has(leaving)) {
        counts.set(leaving, counts.get(leaving)! - 1);
        if (counts.get(leaving) === 0) covered -= 1;
      }
      left += 1;
    }
  }
  return (wanted.size / best) * (wanted.size / queryTerms.size);
}

/** The share of the query's consecutive term pairs that occur side by side, in order, in the candidate. */
function orderScore(queryTerms: string[], candidate: AnalyzedCandidate): number {
  if (queryTerms.length < 2) return candidate.frequencies.has(queryTerms[0] ?? '') ? 1 : 0;
  const pairs = new Set<string>();
  for (let index = 1; index < candidate.terms.length; index++) pairs.add(`${candidate.terms[index - 1]} ${candidate.terms[index]}`);
  let found = 0;
  for (let index = 1; index < queryTerms.length; index++) if (pairs.has(`${queryTerms[index - 1]} ${queryTerms[index]}`)) found += 1;
  return found / (queryTerms.length - 1);
}

export function localRelevanceScores(query: string, candidates: readonly RerankCandidate[]): number[] {
  const queryTerms = analyzeForIndex(query);
  if (queryTerms.length === 0 || candidates.length === 0) return candidates.map(() => 0);
  const analyzed = candidates.map((candidate) => analyze(candidate.text));
  const averageLength = analyzed.reduce((sum, candidate) => sum + candidate.terms.length, 0) / analyzed.length;
  const distinctTerms = new Set(queryTerms);
  const idf = new Map<string, number>();
  for (const term of distinctTerms) {
    const documentFrequency = analyzed.filter((candidate) => candidate.frequencies.has(term)).length;
    idf.set(term, Math.log(1 + (analyzed.length - documentFrequency + 0.5) / (documentFrequency + 0.5)));
  }
  return analyzed.map((candidate) => {
    const score = WEIGHTS.terms * termScore(queryTerms, idf, candidate, averageLength)
      + WEIGHTS.proximity * proximityScore(distinctTerms, candidate)
      + WEIGHTS.order * orderScore(queryTerms, candidate);
    return Math.round(score * 1e6) / 1e6;
  });
}

class LocalReranker implements Reranker {
  readonly name = 'local';

  async rerank(query: string, candidates: RerankCandidate[]): Promise<number[]> {
    return localRelevanceScores(query, candidates);
  }
}

export const localRerankerPlugin: PluginDefinition<'reranker'> = {
  kind: 'reranker',
  name: 'local',
  description: 'Built-in offline reranker: BM25 over the candidates, query-term proximity and order; no key, no download',
  create: () => new LocalReranker(),
};
