/**
 * Chooses between an exact scan and the HNSW graph for one query, so a tenant or metadata filter is
 * always honoured exactly: no hit outside the allowed set, and topK hits whenever the allowed set
 * holds that many.
 *
 * - A filter the index of metadata values serves (its `$eq`, `$in` and range conditions), with few
 *   enough candidate rows (`indexedCandidatesScale`): only those rows are tested and scored,
 *   exactly, in any scope; not tested when they are exactly the rows that pass.
 * - Unrestricted: exact below `exactSearchBelow` rows, else HNSW.
 * - Tenant only: the tenant's rows are contiguous, so up to `exactTenantScanMaxRows` they are
 *   scanned exactly in one SIMD pass, O(tenant size).
 * - Either of those two, while many rows await the graph (`exactScanAwaitingShare`): exact too.
 * - With a filter: exact for small scopes, and when the filter's share of the collection (counted
 *   by the index, else estimated from a sample) is so small that post-filtering the graph would need
 *   too many candidates (about topK / share of them to find topK allowed ones). Exact means the
 *   index's candidates when there are fewer of them than rows in the scope, else a scan testing the
 *   filter row by row over the scope (the tenant's rows, or all), O(scope).
 * - Otherwise the graph is asked for oversampled candidates, post-filtered, growing x4 until topK
 *   allowed hits are found or the graph is exhausted; a short answer falls back to the exact scan.
 * - A graph that failed a write may lack rows: every search scans exactly until it is rebuilt.
 */
import type { MetadataFilter, VectorHit } from '../../../src/plugins.js';
import { matchesFilter } from '../../../src/search/filters/match-filter.js';
import type { CollectionVectors } from './collection-vectors.js';
import type { FilterCandidates } from './metadata-value-index.js';
import { compareHits } from './top-k-hits.js';

/** Chosen from bench/results/vector-stores.json (100k 384-dim clustered vectors, 2 loaded cores). */
export interface SearchThresholds {
  /**
   * Unrestricted, or filtered within a scope, below this many rows: exact scan. A SIMD scan of
   * 5,000 rows took 0.30 ms p50 (0.46 ms in the 2026-11-22 11:18 run on another CPU) against
   * ~0.2 ms for the graph: perfect recall for 0.1-0.3 ms.
   */
  exactSearchBelow: number;
  /**
   * A filter allowing at most this share of the collection: exact scan of its scope. At 1% the
   * scan (12-18 ms at 100k rows, spent testing the filter on every row) and the graph with
   * post-filtering (11 ms, recall 0.96) cost the same; from 2% the graph wins (2.9 ms vs 17 ms).
   */
  exactScanMaxFraction: number;
  /**
   * A tenant (no filter) up to this many rows: exact SIMD scan of its contiguous rows. 10,000
   * rows took 0.72 ms (graph: 1.2 ms, recall 0.996), 20,000 rows 1.7 ms (graph: 0.9 ms, recall
   * 0.96). The 11:18 run on another CPU: 1.3 ms (graph 1.4) and 5.5 ms (graph 1.0, recall 0.97),
   * so at the top of the range perfect recall can cost ~4 ms; not changed on one run.
   */
  exactTenantScanMaxRows: number;
  /**
   * A filter the index of metadata values serves (metadata-value-index.ts) is answered from its
   * candidate rows alone, tested and scored one by one (about 1 µs each), when there are at most
   * this x sqrt(topK x collection rows) of them. Post-filtering the graph costs about topK / share
   * of candidates, so the two cross where candidates^2 grows with topK x rows: at 100k rows near
   * 2,000 candidates for top 10 and 5,000 for top 50 (bench/results/metadata-value-index.json),
   * where the graph's recall was 0.93-0.99 and the candidates' exact. 0: the index is not used.
   */
  indexedCandidatesScale: number;
  /**
   * Rows whose graph insert is not applied yet are scored one by one beside the graph's answer
   * (collection-vectors.ts), ~0.9 µs each, against ~0.09 µs a row for an exact SIMD scan (150k
   * 384-dim rows while the thread inserted them, bench/search/pending-rows-search.ts). From this
   * share of the scope's rows awaiting the graph, as right after a large load, an unfiltered search
   * scans its scope exactly instead.
   */
  exactScanAwaitingShare: number;
  /** Rows whose metadata is tested to estimate a filter's selectivity before choosing. */
  selectivitySampleSize: number;
  /** First HNSW request when restricted: max(topK x this, topK x 2 / estimated share) candidates. */
  oversampling: number;
}

export const defaultSearchThresholds: SearchThresholds = {
  exactSearchBelow: 5_000,
  exactScanMaxFraction: 0.01,
  exactTenantScanMaxRows: 20_000,
  indexedCandidatesScale: 2.5,
  exactScanAwaitingShare: 0.1,
  selectivitySampleSize: 1_000,
  oversampling: 4,
};

export interface CollectionQuery {
  /** Unit-length query embedding. */
  unitQuery: Float32Array;
  topK: number;
  tenant: string | null;
  filter: MetadataFilter | null;
  /** Only these keys may be returned (a query scoped to documents). */
  keys?: readonly number[] | undefined;
}

export async function searchCollectionVectors(vectors: CollectionVectors, query: CollectionQuery, thresholds: SearchThresholds): Promise<VectorHit[]> {
  const { topK, tenant, filter } = query;
  if (topK <= 0 || vectors.size === 0) return [];
  if (query.keys) return exactListed(vectors, query, new Set(query.keys));
  const scopeRows = tenant === null ? vectors.size : vectors.tenantSize(tenant);
  const indexedCandidatesMax = thresholds.indexedCandidatesScale * Math.sqrt(topK * vectors.size);
  // A scale of 0 turns the index off (a configuration to compare against).
  const candidates = filter === null || indexedCandidatesMax === 0 ? null : vectors.filterCandidates(filter, indexedCandidatesMax);
  // Fewer candidates than the scope's rows: scoring them beats an exact scan of the scope, which
  // tests the filter on every row and scores those that pass.
  const scanned = candidates !== null && candidates.size < scopeRows ? candidates : null;
  if (scanned !== null && scanned.size <= indexedCandidatesMax) return exactListed(vectors, query, scanned.keys(), scanned.exact);
  if (!vectors.graphUsable) return exactAllowed(vectors, query, scanned);
  const awaitingGraph = vectors.rowsAwaitingGraph >= scopeRows * thresholds.exactScanAwaitingShare;
  if (tenant === null && filter === null) {
    if (vectors.size < thresholds.exactSearchBelow || awaitingGraph) return exactAllowed(vectors, query, null);
    return approximateThenExact(vectors, query, vectors.size, thresholds, null);
  }
  if (filter === null) {
    if (scopeRows <= thresholds.exactTenantScanMaxRows || awaitingGraph) return exactAllowed(vectors, query, null);
    return approximateThenExact(vectors, query, scopeRows, thresholds, null);
  }
  if (scopeRows < thresholds.exactSearchBelow) return exactAllowed(vectors, query, scanned);
  const allowedEstimate = candidates?.exact ? candidates.size : Math.min(estimateAllowedRows(vectors, query, scopeRows, thresholds), candidates?.size ?? scopeRows);
  if (allowedEstimate <= vectors.size * thresholds.exactScanMaxFraction) return exactAllowed(vectors, query, scanned);
  return approximateThenExact(vectors, query, allowedEstimate, thresholds, scanned);
}

/**
 * Exact top-k of the allowed rows: the index's candidates when there are any, else a scan of the
 * tenant's block when there is a tenant, or of every row.
 */
function exactAllowed(vectors: CollectionVectors, query: CollectionQuery, candidates: FilterCandidates | null): VectorHit[] {
  if (candidates !== null) return exactListed(vectors, query, candidates.keys(), candidates.exact);
  const { unitQuery, topK, tenant, filter } = query;
  const filterAllows = filter === null ? undefined : (metadata: Record<string, unknown>) => matchesFilter(filter, metadata);
  return vectors.exactSearch(unitQuery, topK, tenant ?? undefined, filterAllows);
}

/** Exact ranking of the listed keys that exist and pass the tenant and the filter (unless `filterHolds` for them all). */
function exactListed(vectors: CollectionVectors, { unitQuery, topK, tenant, filter }: CollectionQuery, keys: Iterable<number>, filterHolds = false): VectorHit[] {
  const filterAllows = filter === null || filterHolds ? undefined : (metadata: Record<string, unknown>) => matchesFilter(filter, metadata);
  return vectors.exactSearchOfKeys(unitQuery, topK, keys, tenant ?? undefined, filterAllows);
}

/**
 * Tests the filter on up to `selectivitySampleSize` rows evenly spaced over the scope (a skewed
 * estimate only costs time: a search that comes up short falls back to the exact scan).
 */
function estimateAllowedRows(vectors: CollectionVectors, { tenant, filter }: CollectionQuery, scopeRows: number, thresholds: SearchThresholds): number {
  const sample = vectors.sampleMetadata(tenant ?? undefined, thresholds.selectivitySampleSize);
  if (sample.length === 0 || filter === null) return 0;
  const matched = sample.filter((metadata) => matchesFilter(filter, metadata)).length;
  return Math.round((matched / sample.length) * scopeRows);
}

/** `candidates`: the index's, for the exact answer when the graph cannot give one. */
async function approximateThenExact(
  vectors: CollectionVectors, query: CollectionQuery, allowedEstimate: number, thresholds: SearchThresholds, candidates: FilterCandidates | null,
): Promise<VectorHit[]> {
  const { unitQuery, topK, tenant, filter } = query;
  const isAllowed = (key: number): boolean =>
    (tenant === null || vectors.tenantOf(key) === tenant) && (filter === null || matchesFilter(filter, vectors.metadataOf(key)!));
  const restricted = tenant !== null || filter !== null;
  // Unrestricted, asking for more than topK changes little: the graph's candidate list is
  // expansion_search long either way.
  const share = Math.max(allowedEstimate, 1) / vectors.size;
  let requested = restricted ? Math.max(topK * thresholds.oversampling, Math.ceil((topK * 2) / share)) : topK;
  requested = Math.min(vectors.size, requested);
  for (;;) {
    const found = await vectors.approximateNearest(unitQuery, requested, topK, restricted ? isAllowed : undefined);
    if (found === null) break;
    const { hits, everyRow } = found;
    // Enough allowed hits, or every row was a candidate (the answer is then the exact one).
    if (hits.length >= topK || everyRow) return hits.sort(compareHits).slice(0, topK);
    if (requested >= vectors.size) break;
    requested = Math.min(vectors.size, requested * thresholds.oversampling);
  }
  // The graph failed, rows are unreachable in it (rare, after many removals), or a filter is far
  // more selective than its sample suggested: the exact search (candidates or scan) answers correctly.
  return exactAllowed(vectors, query, candidates);
}
