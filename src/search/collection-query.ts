import type { CollectionRecord, SearchMode } from '../db/entities/index.js';
import { fetchChunksByKey } from '../documents/chunk-store.js';
import { attachMultimodalElements, type MultimodalElement } from '../documents/multimodal-elements.js';
import { tenantText } from '../documents/metadata-rules.js';
import { BadRequestError } from '../errors.js';
import type { EmbeddingModel, Reranker, SqlRunner } from '../plugins.js';
import { attachContextWindows, type ResultContext } from './context-window.js';
import { documentScope, type DocumentNotReady, type ListedDocumentRow } from './document-scope.js';
import { parseFilter } from './filters/parse-filter.js';
import { splitTenantEquality } from './filters/tenant-equality.js';
import { highlightSpans, highlightTerms, type Highlight } from './highlights.js';
import { learnDocumentsOfChunks, limitPerDocument, MAX_LIMITED_DEPTH } from './per-document-limit.js';
import type { QueryCache } from './query-cache.js';
import { queryEmbedding, queryEmbeddingDigest } from './query-embedding.js';
import type { QueryEventRecorder } from './query-events.js';
import type { CollectionQueryInput } from './query-request.js';
import { reciprocalRankFusion } from './reciprocal-rank-fusion.js';
import { firstStageCount, rerankRequested, rerankResults } from './rerank-results.js';
import type { SearchIndexes } from './search-indexes.js';

/** RRF constant of api-contract 3. */
export const DEFAULT_RRF_K = 60;

/**
 * Default list weights of hybrid fusion. For the built-in `local` embedder they come from
 * bench/quality on Cranfield at k = 60: keyword 6 : semantic 1 gives nDCG@10 0.369 and
 * recall@100 0.744, above BM25 alone (0.363 / 0.740), while 1 : 1 falls below it (0.355), because
 * the hashing embedder is lexical and mostly repeats what BM25 knows. Hosted models carry meaning
 * BM25 lacks, so they keep the neutral 1 : 1 of standard RRF until a benchmark says otherwise; so
 * does a query that brings its own vector (`embedding`), which comes from the client's model.
 */
export function defaultFusionWeights(collection: CollectionRecord, ownEmbedding = false): { keyword: number; semantic: number } {
  return collection.embeddingProvider === 'local' && !ownEmbedding ? { keyword: 6, semantic: 1 } : { keyword: 1, semantic: 1 };
}
/** Each list feeding the fusion is this deep at least, so a document ranked low in one list can still win. */
const MIN_FUSION_DEPTH = 50;

export interface QueryResult {
  id: string;
  document_id: string | null;
  /** The file name and title of the chunk's document, for citing it; null for a raw vector (and a title for a document without one). */
  document_filename: string | null;
  document_title: string | null;
  chunk_index: number;
  text: string;
  score: number;
  scores: { semantic?: number; keyword?: number; rerank?: number };
  metadata: Record<string, unknown>;
  collection: string;
  /** With `multimodal: true`: the images of the result's page or section. */
  multimodal_elements?: MultimodalElement[];
  /** With `context_window`: the result's chunk with its neighbours, as one text; null for a raw vector. */
  context?: (ResultContext & { highlights?: Highlight[] }) | null;
  /** With `highlight: true`: where `text` holds the query's terms. */
  highlights?: Highlight[];
}

export interface QueryTimings {
  scope_ms?: number;
  range_index_ms?: number;
  embedding_ms?: number;
  semantic_ms?: number;
  keyword_ms?: number;
  fusion_ms?: number;
  per_document_ms?: number;
  fetch_ms?: number;
  rerank_ms?: number;
  context_ms?: number;
  total_ms: number;
  cached?: boolean;
}

export interface QueryResponse {
  results: QueryResult[];
  query: string;
  collection: string;
  search_mode: SearchMode;
  total: number;
  timings: QueryTimings;
  /** With `document_ids`: the listed documents that are not ready, in the order listed. */
  documents_not_ready?: DocumentNotReady[];
}

export interface QueryRuntime {
  sql: SqlRunner;
  indexes: SearchIndexes;
  embeddingModelFor(collection: CollectionRecord): EmbeddingModel;
  rerankerFor(collection: CollectionRecord): Reranker;
  cache: QueryCache<QueryResponse>;
  cacheTtlSeconds(): Promise<number>;
  events: QueryEventRecorder;
}

/** Timings to a hundredth of a millisecond. */
export const roundMilliseconds = (milliseconds: number) => Math.round(milliseconds * 100) / 100;

/** The tenant value of a query: `filters: {"<tenant_field>": value}` (api-contract 5); 400 naming the field when absent. */
export function queryTenant(collection: CollectionRecord, filter: Record<string, unknown> | null | undefined): string | null {
  const field = collection.tenantField;
  if (!field) return null;
  // Own keys only: a tenant field named "constructor" read Object.prototype's when the filter had none.
  const condition = filter && Object.hasOwn(filter, field) ? filter[field] : undefined;
  const value = typeof condition === 'object' && condition !== null && !Array.isArray(condition) ? (condition as Record<string, unknown>).$eq : condition;
  const tenant = tenantText(value, `filters.${field}`);
  if (tenant !== undefined) return tenant;
  throw new BadRequestError(`filters.${field} is required: collection ${collection.name} separates tenants by "${field}" (send {"filters": {"${field}": "<tenant>"}})`);
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await work();
  return [value, performance.now() - start];
}

/** JSON writes both infinities as null: a `min_score` (or filter bound) of 1e400 and -1e400 shared an entry. */
const keepInfinities = (_key: string, value: unknown) => (value === Infinity || value === -Infinity ? String(value) : value);

function cacheKey(collection: CollectionRecord, input: CollectionQueryInput, embedding: Float32Array | undefined): string {
  const { skip_cache: _skip, embedding: _values, ...rest } = input;
  const vector = embedding ? `:${queryEmbeddingDigest(embedding)}` : '';
  return `${collection.id}:${collection.writeVersion}${vector}:${JSON.stringify(rest, keepInfinities)}`;
}

/**
 * Runs one query against one collection: semantic, keyword (BM25) or hybrid (RRF of both).
 * `listedDocuments` are the `document_ids` rows when a query over several collections has read them.
 */
export async function queryCollection(runtime: QueryRuntime, collection: CollectionRecord, input: CollectionQueryInput, listedDocuments?: readonly ListedDocumentRow[]): Promise<QueryResponse> {
  const started = performance.now();
  const mode = input.search_mode ?? collection.defaultSearchMode;
  const topK = input.top_k ?? collection.defaultTopK;
  const minScore = input.min_score ?? collection.defaultMinScore;
  const requestFilter = parseFilter(input.filters ?? undefined);
  const tenant = queryTenant(collection, input.filters);
  // The stores keep tenants apart by their text: compared again as JSON values by the filter, the
  // number 5 and the string "5" were two tenants to results that shared one set of BM25 statistics.
  const filter = splitTenantEquality(requestFilter, collection.tenantField).rest;
  const givenEmbedding = input.embedding ? queryEmbedding(collection, mode, input.embedding) : undefined;
  const weights = defaultFusionWeights(collection, givenEmbedding !== undefined);
  const keywordWeight = input.keyword_weight ?? weights.keyword;
  const semanticWeight = input.semantic_weight ?? weights.semantic;
  if (mode === 'hybrid' && keywordWeight === 0 && semanticWeight === 0) {
    throw new BadRequestError('keyword_weight and semantic_weight are both 0: hybrid fusion would rank nothing (set one above 0)');
  }

  const key = cacheKey(collection, input, givenEmbedding);
  const cacheTtl = await runtime.cacheTtlSeconds();
  if (!input.skip_cache) {
    const cached = runtime.cache.get(key, cacheTtl);
    if (cached) {
      const total = performance.now() - started;
      runtime.events.record({ collectionId: collection.id, query: input.query, searchMode: mode, resultCount: cached.total, latencyMs: total, cached: true, at: new Date() });
      // Only the lookup ran: the stored stage timings would add up to more than this total.
      return { ...cached, timings: { total_ms: roundMilliseconds(total), cached: true } };
    }
  }

  const timings: QueryTimings = { total_ms: 0 };
  let keys: number[] | undefined;
  let notReady: DocumentNotReady[] | undefined;
  if (input.document_ids) {
    const [scope, scopeMs] = await timed(() => documentScope(runtime.sql, collection, input.document_ids!, tenant, listedDocuments));
    ({ keys, notReady } = scope);
    timings.scope_ms = roundMilliseconds(scopeMs);
  }
  const reranking = rerankRequested(collection, input.rerank);
  const candidates = firstStageCount(reranking, topK);
  const addTiming = (stage: 'semantic_ms' | 'keyword_ms' | 'fusion_ms', milliseconds: number) => {
    timings[stage] = roundMilliseconds((timings[stage] ?? 0) + milliseconds);
  };
  // Embedded once, however many depths the per-document limit makes the query search at.
  let queryVector = givenEmbedding ? Promise.resolve(givenEmbedding) : undefined;
  const embedQuery = () => (queryVector ??= (async () => {
    const [embedded, embeddingMs] = await timed(() => runtime.embeddingModelFor(collection).embed([input.query], 'query'));
    timings.embedding_ms = roundMilliseconds(embeddingMs);
    return embedded.vectors[0]!;
  })());
  const runSemantic = async (depth: number) => {
    const embedding = await embedQuery();
    const [hits, searchMs] = await timed(() => runtime.indexes.vectorStore.search({
      collectionId: collection.id, embedding, topK: depth, filter, tenant, keys,
    }));
    addTiming('semantic_ms', searchMs);
    return hits;
  };
  const runKeyword = async (depth: number) => {
    const [hits, searchMs] = await timed(() => runtime.indexes.keywordIndex.search({
      collectionId: collection.id, query: input.query, topK: depth, filter, tenant, keys,
    }));
    addTiming('keyword_ms', searchMs);
    return hits;
  };

  type RankedHit = { key: number; score: number; scores: QueryResult['scores'] };
  /** The ranked list from lists `depth` deep, and whether every list held fewer (nothing deeper to find). */
  const rankAtDepth = async (depth: number): Promise<{ ranked: RankedHit[]; exhausted: boolean }> => {
    if (mode === 'semantic') {
      const hits = await runSemantic(depth);
      return { ranked: hits.map((hit) => ({ key: hit.key, score: hit.score, scores: { semantic: hit.score } })), exhausted: hits.length < depth };
    }
    if (mode === 'keyword') {
      const hits = await runKeyword(depth);
      return { ranked: hits.map((hit) => ({ key: hit.key, score: hit.score, scores: { keyword: hit.score } })), exhausted: hits.length < depth };
    }
    const [semanticHits, keywordHits] = await Promise.all([runSemantic(depth), runKeyword(depth)]);
    const fusionStart = performance.now();
    const semanticScores = new Map(semanticHits.map((hit) => [hit.key, hit.score]));
    const keywordScores = new Map(keywordHits.map((hit) => [hit.key, hit.score]));
    const fused = reciprocalRankFusion([
      { keys: semanticHits.map((hit) => hit.key), weight: semanticWeight },
      { keys: keywordHits.map((hit) => hit.key), weight: keywordWeight },
    ], input.rrf_k ?? DEFAULT_RRF_K);
    const ranked = fused.map((hit) => ({
      key: hit.key,
      score: hit.score,
      scores: {
        ...(semanticScores.has(hit.key) ? { semantic: semanticScores.get(hit.key)! } : {}),
        ...(keywordScores.has(hit.key) ? { keyword: keywordScores.get(hit.key)! } : {}),
      },
    }));
    addTiming('fusion_ms', performance.now() - fusionStart);
    return { ranked, exhausted: semanticHits.length < depth && keywordHits.length < depth };
  };
  // `min_score` applies to the `score` returned: a reranked result's is the reranker's, known after it.
  const passing = (ranked: RankedHit[]) => (reranking ? ranked : ranked.filter((hit) => hit.score >= minScore));

  let depth = mode === 'hybrid' ? Math.max(candidates * 2, MIN_FUSION_DEPTH) : candidates;
  const rangeIndexes = runtime.indexes.rangeIndexes;
  if (filter && !keys && rangeIndexes) {
    // Few enough chunks in the filter's ranges: each list ranks just them, exactly.
    const [inRange, rangeMs] = await timed(() => rangeIndexes.candidateKeys(collection.id, filter, tenant, depth));
    if (inRange) {
      keys = inRange;
      timings.range_index_ms = roundMilliseconds(rangeMs);
    }
  }
  let { ranked, exhausted } = await rankAtDepth(depth);
  let eligible = passing(ranked);
  const perDocument = input.max_per_document;
  if (perDocument !== undefined) {
    const limitStart = performance.now();
    const documentOf = new Map<number, string | null>();
    for (;;) {
      await learnDocumentsOfChunks(runtime.sql, eligible.map((hit) => hit.key), documentOf);
      const limited = limitPerDocument(eligible, documentOf, perDocument);
      if (limited.length >= candidates || exhausted || depth >= MAX_LIMITED_DEPTH) {
        eligible = limited;
        break;
      }
      depth = Math.min(depth * 4, MAX_LIMITED_DEPTH);
      ({ ranked, exhausted } = await rankAtDepth(depth));
      eligible = passing(ranked);
    }
    timings.per_document_ms = roundMilliseconds(performance.now() - limitStart);
  }
  const selected = eligible.slice(0, candidates);
  const [chunks, fetchMs] = await timed(() => fetchChunksByKey(runtime.sql, selected.map((hit) => hit.key)));
  timings.fetch_ms = roundMilliseconds(fetchMs);
  let results: QueryResult[] = [];
  for (const hit of selected) {
    const chunk = chunks.get(hit.key);
    // A chunk deleted between the index lookup and the fetch is simply left out.
    if (!chunk) continue;
    results.push({
      id: chunk.id, document_id: chunk.document_id, document_filename: chunk.document_filename, document_title: chunk.document_title,
      chunk_index: chunk.chunk_index, text: chunk.text,
      score: hit.score, scores: hit.scores, metadata: chunk.metadata, collection: collection.name,
    });
  }
  if (reranking) results = (await rerankResults(runtime, collection, input.query, results, topK, timings)).filter((result) => result.score >= minScore);
  if (input.context_window) {
    const window = input.context_window;
    const [, contextMs] = await timed(() => attachContextWindows(runtime.sql, results, window));
    timings.context_ms = roundMilliseconds(contextMs);
  }
  if (input.highlight) {
    const terms = highlightTerms(input.query);
    for (const result of results) {
      result.highlights = highlightSpans(result.text, terms);
      if (result.context) result.context.highlights = highlightSpans(result.context.text, terms);
    }
  }
  if (input.multimodal) await attachMultimodalElements(runtime.sql, collection, results);
  timings.total_ms = roundMilliseconds(performance.now() - started);
  const response: QueryResponse = {
    results, query: input.query, collection: collection.name, search_mode: mode, total: results.length, timings,
    ...(notReady ? { documents_not_ready: notReady } : {}),
  };
  // An answer from documents still being indexed is provisional: the write version moves before
  // they turn ready, so a cached copy could outlive their status.
  if (!notReady?.length) runtime.cache.set(key, response, cacheTtl);
  runtime.events.record({ collectionId: collection.id, query: input.query, searchMode: mode, resultCount: results.length, latencyMs: timings.total_ms, cached: false, at: new Date() });
  return response;
}
