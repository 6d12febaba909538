/**
 * BM25 scoring, written once so the database-backed keyword search and the in-memory reference
 * index below compute the same numbers.
 *
 * Formula and defaults follow /work/shared/tools/bm25_eval.py, which reproduces published BM25
 * figures (BEIR SciFact 0.679 with Porter stemming, as Anserini reports):
 *   idf    = ln(1 + (N - df + 0.5) / (df + 0.5))      Lucene's form: the +1 keeps idf > 0 even for
 *                                                    terms in more than half the documents
 *   weight = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
 * k1 = 0.9 and b = 0.4 are Anserini's defaults, tuned on TREC collections.
 */
import { analyzeForIndex } from '../text/english-analyzer.js';

export const defaultBm25K1 = 0.9;
export const defaultBm25B = 0.4;

export interface Bm25TermStatistics {
  /** Occurrences of the term in the document. */
  termFrequency: number;
  /** Terms in the document (after stop-word removal). */
  documentLength: number;
  averageDocumentLength: number;
  /** Documents containing the term. */
  documentFrequency: number;
  documentCount: number;
  k1?: number;
  b?: number;
}

/** Lucene/Robertson idf with +1 inside the log (never negative). */
export function bm25Idf(documentFrequency: number, documentCount: number): number {
  return Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
}

/** One term's contribution to one document's score, for one occurrence of the term in the query. */
export function bm25TermWeight(statistics: Bm25TermStatistics): number {
  const { termFrequency, documentLength, averageDocumentLength, documentFrequency, documentCount } = statistics;
  if (termFrequency <= 0) return 0;
  return bm25WeightForIdf(
    bm25Idf(documentFrequency, documentCount),
    termFrequency,
    documentLength,
    averageDocumentLength,
    statistics.k1 ?? defaultBm25K1,
    statistics.b ?? defaultBm25B,
  );
}

/**
 * bm25TermWeight with the term's idf already computed, for scoring loops that compute it once per
 * term instead of once per posting (the logarithm was half of the in-memory index's query time).
 * The same arithmetic in the same order, so both give bit-identical scores. `termFrequency` > 0.
 */
export function bm25WeightForIdf(
  idf: number,
  termFrequency: number,
  documentLength: number,
  averageDocumentLength: number,
  k1: number,
  b: number,
): number {
  const lengthNormalisation = k1 * (1 - b + (b * documentLength) / averageDocumentLength);
  return (idf * termFrequency * (k1 + 1)) / (termFrequency + lengthNormalisation);
}

export interface Bm25Hit {
  id: string;
  score: number;
}

interface Posting {
  document: number;
  termFrequency: number;
}

function countTerms(terms: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
  return counts;
}

/**
 * A small in-memory BM25 index over the English analyzer, for tests and benchmarks that check
 * the formula against the reference script. Not for production: everything lives in the heap.
 */
export class Bm25Index {
  private readonly postings = new Map<string, Posting[]>();
  private readonly documentIds: string[] = [];
  private readonly documentLengths: number[] = [];
  private totalLength = 0;

  constructor(
    private readonly k1 = defaultBm25K1,
    private readonly b = defaultBm25B,
  ) {}

  get size(): number {
    return this.documentIds.length;
  }

  add(id: string, text: string): void {
    const document = this.documentIds.length;
    const terms = analyzeForIndex(text);
    this.documentIds.push(id);
    this.documentLengths.push(terms.length);
    this.totalLength += terms.length;
    for (const [term, termFrequency] of countTerms(terms)) {
      let list = this.postings.get(term);
      if (!list) this.postings.set(term, (list = []));
      list.push({ document, termFrequency });
    }
  }

  /**
   * Top `k` documents by BM25, ties broken by id (ascending) as the reference script does.
   * A term repeated in the query counts once per repetition, also like the script.
   */
  search(query: string, k: number): Bm25Hit[] {
    const documentCount = this.documentIds.length;
    if (documentCount === 0 || k <= 0) return [];
    const averageDocumentLength = this.totalLength / documentCount;
    const scores = new Map<number, number>();
    for (const [term, queryFrequency] of countTerms(analyzeForIndex(query))) {
      const list = this.postings.get(term);
      if (!list) continue;
      for (const { document, termFrequency } of list) {
        const weight = bm25TermWeight({
          termFrequency,
          documentLength: this.documentLengths[document],
          averageDocumentLength,
          documentFrequency: list.length,
          documentCount,
          k1: this.k1,
          b: this.b,
        });
        scores.set(document, (scores.get(document) ?? 0) + queryFrequency * weight);
      }
    }
    return [...scores]
      .map(([document, score]) => ({ id: this.documentIds[document], score }))
      .sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))
      .slice(0, k);
  }
}
