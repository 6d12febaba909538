/**
 * The keyword (BM25) index contract, and the few rules every implementation shares: how a chunk
 * and a query become terms, and how tenants partition a collection's statistics.
 *
 * Implementations: sql-keyword-index.ts (postings in PostgreSQL tables) and
 * memory-keyword-index.ts (in-process, for the embedded database). Both pass
 * test/search/keyword-index-conformance.test.ts and score exactly as src/search/bm25.ts.
 *
 * BM25 statistics (chunk count, average chunk length, document frequency) are kept per collection
 * and per tenant value: one tenant's corpus neither skews another's ranking nor reveals, through
 * scores, which terms the other tenant uses.
 */
import { defaultBm25B, defaultBm25K1 } from '../bm25.js';
import type { MetadataFilter } from '../filters/filter-types.js';
import { analyzeForIndex } from '../../text/english-analyzer.js';

export interface KeywordEntry {
  /** The chunk's key (`chunks.key`). */
  key: number;
  text: string;
  /** The chunk's filterable metadata, as stored in `chunks.metadata`. */
  metadata: Record<string, unknown>;
  tenant: string | null;
}

export interface KeywordSearchRequest {
  collectionId: string;
  query: string;
  topK: number;
  filter?: MetadataFilter | undefined;
  /**
   * A string or null searches only that tenant's partition, scored with its own statistics.
   * undefined searches every partition of the collection, each chunk still scored with its own
   * partition's statistics (a collection without a tenant field has only the null partition).
   */
  tenant?: string | null | undefined;
  /** When given, only these keys may be returned (a query scoped to some documents); statistics stay the partition's. */
  keys?: readonly number[] | undefined;
  k1?: number | undefined;
  b?: number | undefined;
}

export interface KeywordHit {
  key: number;
  /** BM25 score. */
  score: number;
}

export interface KeywordIndex {
  readonly name: 'memory' | 'sql';
  /**
   * Inserts or replaces by key (the last entry wins when a key repeats). The SQL index writes no
   * entry for a key whose `chunks` row is gone (it removes the old one), as pgvector does.
   */
  add(collectionId: string, entries: KeywordEntry[]): Promise<void>;
  remove(collectionId: string, keys: number[]): Promise<void>;
  /**
   * After a truncate deleted the collection's rows: removes every entry whose `chunks` row is gone
   * and keeps those of rows written since (an upload racing the truncate), with statistics to match.
   */
  clearDeletedRows(collectionId: string): Promise<void>;
  dropCollection(collectionId: string): Promise<void>;
  /**
   * Brings the collection's index into memory, for an index kept there (the memory index); the SQL
   * index has nothing to load.
   */
  load(collectionId: string): Promise<void>;
  /** Best first, equal scores by ascending key. An empty or all-stop-word query gives []. */
  search(request: KeywordSearchRequest): Promise<KeywordHit[]>;
  close(): Promise<void>;
}

/** Anserini's defaults, the parameters of the reference figures (bm25.ts). */
export const defaultKeywordK1 = defaultBm25K1;
export const defaultKeywordB = defaultBm25B;

/**
 * The partition a tenant value lives in. The SQL tables store "no tenant" as '' (their key
 * columns are NOT NULL), so null and '' share a partition in every implementation alike.
 */
export function tenantPartition(tenant: string | null | undefined): string {
  return tenant ?? '';
}

/**
 * `keyword_postings.term` is varchar(255). The analyzer keeps any run of letters and digits, so a
 * hash or base64 blob can yield a longer term; it is cut to 255 UTF-16 units in documents and
 * queries alike, so it still matches itself (in the SQL index half a cut surrogate pair is stored
 * as U+FFFD, and the query term's half becomes U+FFFD the same way).
 */
export const maxTermLength = 255;

function indexTerms(text: string): string[] {
  const terms = analyzeForIndex(text);
  for (let index = 0; index < terms.length; index++) {
    if (terms[index].length > maxTermLength) terms[index] = terms[index].slice(0, maxTermLength);
  }
  return terms;
}

export interface AnalyzedChunk {
  /** Term → occurrences in the chunk. */
  termFrequencies: Map<string, number>;
  /** Terms in the chunk after stop-word removal: BM25's document length. */
  length: number;
}

export function analyzeChunk(text: string): AnalyzedChunk {
  const terms = indexTerms(text);
  const termFrequencies = new Map<string, number>();
  for (const term of terms) termFrequencies.set(term, (termFrequencies.get(term) ?? 0) + 1);
  return { termFrequencies, length: terms.length };
}

export interface QueryTerm {
  term: string;
  /** A term repeated in the query counts once per repetition, as in the reference script. */
  frequency: number;
}

/**
 * The query's distinct terms in ascending order. Every implementation adds a chunk's per-term
 * weights in this order, so equal inputs give bit-identical scores and ties stay ties.
 */
export function analyzeQuery(query: string): QueryTerm[] {
  const { termFrequencies } = analyzeChunk(query);
  return [...termFrequencies]
    .map(([term, frequency]) => ({ term, frequency }))
    .sort((left, right) => (left.term < right.term ? -1 : left.term > right.term ? 1 : 0));
}
