/**
 * The built-in `local` reranker: offline, deterministic, free. It reads each candidate against the
 * query as a whole, which first-stage retrieval does not: BM25 weights of the query terms, how
 * close together they occur, and whether they occur in the query's order. Read alone, that ranks
 * worse than the first stage it reorders (Cranfield nDCG@10 0.32 against 0.36 in keyword mode),
 * because it sees 30 to 100 candidates, not the collection. So it answers the fusion of its order
 * with the first-stage order, which counts twice: a candidate moves up when it reads clearly
 * better than its neighbours, and what the first stage knew is kept. That is better than the first
 * stage in every mode (bench/results/quality-cranfield-rerank-pglite.json,
 * quality-readmes-rerank-pglite.json). A cross-encoder understands meaning and does better; this
 * one needs no download and takes about 1 ms for 30 candidates, 3 ms for 100 Cranfield abstracts,
 * most of it analysing their text.
 */
import type { PluginDefinition, RerankCandidate, Reranker } from '../../../src/plugins.js';
import { reciprocalRankFusion } from '../../../src/search/reciprocal-rank-fusion.js';
import { analyzeForIndex } from '../../../src/text/english-analyzer.js';

const K1 = 1.2;
const B = 0.75;
/** Shares of the relevance score: term weight, proximity, query order. */
const WEIGHTS = { terms: 0.5, proximity: 0.3, order: 0.2 };
/**
 * Imagined candidates that hold none of the query terms, added to the real ones when weighing
 * terms. The first stage chose the candidates for holding the query's distinctive term, so among
 * them it looks common: with 30 candidates that all hold "semver", its IDF fell to 0.02 and words
 * like "check" decided the order. With 100 more it keeps 1.5 (against 4.5 for a term one candidate
 * holds). 50 to 200 measure alike; 0 (the plain candidate IDF) is worst.
 */
const UNSEEN_CANDIDATES = 100;
/**
 * Weights of the first-stage order and of this reranker's order in the fusion, at the service's
 * RRF constant (30 and 100 measure alike). Of 1, 1.5, 2, 2.5 and 3 : 1, 2 : 1 did best over both
 * benchmarks; 1 : 1 lost a README question to the first stage in keyword mode, 3 : 1 gains less.
 */
const FUSION = { firstStage: 2, relevance: 1, k: 60 };

/** What the features read of a candidate: its length in terms, and where each query term occurs. */
interface AnalyzedCandidate {
  length: number;
  /** Query term → its positions, ascending. Only query terms are kept: the rest is never read. */
  positions: Map<string, number[]>;
}

function analyze(text: string, queryTerms: ReadonlySet<string>): AnalyzedCandidate {
  const terms = analyzeForIndex(text);
  const positions = new Map<string, number[]>();
  terms.forEach((term, position) => {
    if (!queryTerms.has(term)) return;
    const list = positions.get(term);
    if (list) list.push(position);
    else positions.set(term, [position]);
  });
  return { length: terms.length, positions };
}

/** BM25 of the candidate, divided by the most any candidate could score, so it lies in [0, 1). */
function termScore(queryTerms: string[], idf: Map<string, number>, candidate: AnalyzedCandidate, averageLength: number): number {
  let score = 0;
  let maximum = 0;
  const lengthNorm = 1 - B + (B * candidate.length) / Math.max(averageLength, 1);
  for (const term of queryTerms) {
    const weight = idf.get(term)!;
    const frequency = candidate.positions.get(term)?.length ?? 0;
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
  const held = candidate.positions.size;
  if (held === 0) return 0;
  if (held === 1) return 1 / queryTerms.size;
  const occurrences = [...candidate.positions].flatMap(([term, positions]) => positions.map((position) => ({ term, position })))
    .sort((a, b) => a.position - b.position);
  const counts = new Map<string, number>();
  let covered = 0;
  let best = Number.POSITIVE_INFINITY;
  let left = 0;
  for (const entering of occurrences) {
    counts.set(entering.term, (counts.get(entering.term) ?? 0) + 1);
    if (counts.get(entering.term) === 1) covered += 1;
    while (covered === held) {
      const leaving = occurrences[left]!;
      best = Math.min(best, entering.position - leaving.position + 1);
      counts.set(leaving.term, counts.get(leaving.term)! - 1);
      if (counts.get(leaving.term) === 0) covered -= 1;
      left += 1;
    }
  }
  return (held / best) * (held / queryTerms.size);
}

/** The share of the query's consecutive term pairs that occur side by side, in order, in the candidate. */
function orderScore(queryTerms: string[], candidate: AnalyzedCandidate): number {
  if (queryTerms.length < 2) return candidate.positions.has(queryTerms[0] ?? '') ? 1 : 0;
  let found = 0;
  for (let index = 1; index < queryTerms.length; index++) {
    const following = new Set(candidate.positions.get(queryTerms[index]!) ?? []);
    if ((candidate.positions.get(queryTerms[index - 1]!) ?? []).some((position) => following.has(position + 1))) found += 1;
  }
  return found / (queryTerms.length - 1);
}

/** How well each candidate reads against the query on its own, in [0, 1]; candidates in the order given. */
export function localRelevanceScores(query: string, candidates: readonly RerankCandidate[]): number[] {
  const queryTerms = analyzeForIndex(query);
  if (queryTerms.length === 0 || candidates.length === 0) return candidates.map(() => 0);
  const distinctTerms = new Set(queryTerms);
  const analyzed = candidates.map((candidate) => analyze(candidate.text, distinctTerms));
  const averageLength = analyzed.reduce((sum, candidate) => sum + candidate.length, 0) / analyzed.length;
  const idf = new Map<string, number>();
  const population = analyzed.length + UNSEEN_CANDIDATES;
  for (const term of distinctTerms) {
    const documentFrequency = analyzed.filter((candidate) => candidate.positions.has(term)).length;
    idf.set(term, Math.log(1 + (population - documentFrequency + 0.5) / (documentFrequency + 0.5)));
  }
  return analyzed.map((candidate) => {
    const score = WEIGHTS.terms * termScore(queryTerms, idf, candidate, averageLength)
      + WEIGHTS.proximity * proximityScore(distinctTerms, candidate)
      + WEIGHTS.order * orderScore(queryTerms, candidate);
    return Math.round(score * 1e6) / 1e6;
  });
}

/**
 * What the reranker answers: the RRF of the first-stage order (the order of `candidates`, best
 * first) and the order of `localRelevanceScores`, scaled so that first in both is 1. Candidates the
 * relevance reading ties keep their first-stage order.
 */
export function localRerankScores(query: string, candidates: readonly RerankCandidate[]): number[] {
  const relevance = localRelevanceScores(query, candidates);
  const firstStageOrder = candidates.map((_, index) => index);
  const relevanceOrder = [...firstStageOrder].sort((a, b) => relevance[b]! - relevance[a]! || a - b);
  const fused = reciprocalRankFusion([
    { keys: firstStageOrder, weight: FUSION.firstStage },
    { keys: relevanceOrder, weight: FUSION.relevance },
  ], FUSION.k);
  const scores = new Array<number>(candidates.length);
  for (const hit of fused) scores[hit.key] = Math.round(hit.score * 1e6) / 1e6;
  return scores;
}

class LocalReranker implements Reranker {
  readonly name = 'local';

  async rerank(query: string, candidates: RerankCandidate[]): Promise<number[]> {
    return localRerankScores(query, candidates);
  }
}

export const localRerankerPlugin: PluginDefinition<'reranker'> = {
  kind: 'reranker',
  name: 'local',
  description: 'Built-in offline reranker: query-term weight, proximity and order, fused with the first-stage order; no key, no download',
  create: () => new LocalReranker(),
};
