/**
 * Chooses between an exact scan and the HNSW graph for one query, so a tenant or metadata filter is
 * always honoured exactly: no hit outside the allowed set, and topK hits whenever the allowed set
 * holds that many.
 *
 * - Unrestricted: exact below `exactSearchBelow` rows, else HNSW.
 * - Restricted: the allowed set is the tenant's key list (O(tenant size)) narrowed by the filter.
 *   Few allowed rows, or a small fraction of the collection, are scanned exactly: post-filtering
 *   the graph's answers would need about topK / fraction candidates to find topK allowed ones.
 *   Otherwise the graph is asked for oversampled candidates, post-filtered, growing x4 until topK
 *   allowed hits are found or the graph is exhausted; a short answer falls back to the exact scan.
 */
import type { MetadataFilter, VectorHit } from '../../../src/plugins.js';
import { matchesFilter } from '../../../src/search/filters/match-filter.js';
import type { CollectionVectors } from './collection-vectors.js';
import { compareHits } from './top-k-hits.js';

/** Chosen from bench/results/vector-stores.json (100k 384-dim clustered vectors, 2 cores). */
export interface SearchThresholds {
  /** An exact scan costs ~0.35 µs a row: 2,000 rows stay under 1 ms with perfect recall. */
  exactSearchBelow: number;
  /** Allowed sets up to this fraction of the collection are scanned exactly... */
  exactScanMaxFraction: number;
  /** ...unless they exceed this many rows, where a scan would cost more than oversampled HNSW. */
  exactScanMaxRows: number;
  /** Rows whose metadata is tested to estimate a filter's selectivity before choosing. */
  selectivitySampleSize: number;
  /** First HNSW request: max(topK x this, topK x 2 / estimated fraction) candidates. */
  oversampling: number;
}

export const defaultSearchThresholds: SearchThresholds = {
  exactSearchBelow: 2_000,
  exactScanMaxFraction: 0.1,
  exactScanMaxRows: 20_000,
  selectivitySampleSize: 1_000,
  oversampling: 4,
};

export interface CollectionQuery {
  /** Unit-length query embedding. */
  unitQuery: Float32Array;
  topK: number;
  tenant: string | null;
  filter: MetadataFilter | null;
}

export function searchCollectionVectors(vectors: CollectionVectors, query: CollectionQuery, thresholds: SearchThresholds): VectorHit[] {
  const { unitQuery, topK, tenant, filter } = query;
  if (topK <= 0 || vectors.size === 0) return [];
  if (tenant === null && filter === null) {
    if (vectors.size < thresholds.exactSearchBelow) return vectors.exactSearchAll(unitQuery, topK);
    return approximateThenExact(vectors, query, vectors.size, () => true, thresholds);
  }

  const candidates: Iterable<number> = tenant === null ? vectors.keys() : vectors.keysOf(tenant);
  const candidateCount = tenant === null ? vectors.size : vectors.keysOf(tenant).size;
  const isAllowed = (key: number): boolean =>
    (tenant === null || vectors.tenantOf(key) === tenant) && (filter === null || matchesFilter(filter, vectors.metadataOf(key)!));
  const allowedEstimate = filter === null ? candidateCount : estimateAllowedRows(vectors, tenant, filter, thresholds);
  if (prefersExactScan(allowedEstimate, vectors.size, thresholds)) {
    const allowed = filter === null ? candidates : filterKeys(candidates, isAllowed);
    return vectors.exactSearchKeys(unitQuery, allowed, topK);
  }
  return approximateThenExact(vectors, query, allowedEstimate, isAllowed, thresholds);
}

function prefersExactScan(allowedRows: number, collectionRows: number, thresholds: SearchThresholds): boolean {
  if (allowedRows < thresholds.exactSearchBelow) return true;
  return allowedRows <= thresholds.exactScanMaxRows && allowedRows <= collectionRows * thresholds.exactScanMaxFraction;
}

/**
 * Tests the filter on up to `selectivitySampleSize` candidates: evenly spaced rows of the whole
 * collection, or the first keys of the tenant's list (insertion order; a skewed estimate only
 * costs time, since the search below falls back to an exact scan when it comes up short).
 */
function estimateAllowedRows(vectors: CollectionVectors, tenant: string | null, filter: MetadataFilter, thresholds: SearchThresholds): number {
  const candidates = tenant === null ? vectors.size : vectors.keysOf(tenant).size;
  if (candidates <= thresholds.selectivitySampleSize) {
    let allowed = 0;
    for (const key of tenant === null ? vectors.keys() : vectors.keysOf(tenant)) if (matchesFilter(filter, vectors.metadataOf(key)!)) allowed++;
    return allowed;
  }
  let sampled = 0;
  let matched = 0;
  if (tenant === null) {
    const stride = candidates / thresholds.selectivitySampleSize;
    for (let position = 0; position < candidates; position += stride, sampled++) {
      if (matchesFilter(filter, vectors.metadataAtSlot(Math.floor(position)))) matched++;
    }
  } else {
    for (const key of vectors.keysOf(tenant)) {
      if (sampled++ === thresholds.selectivitySampleSize) break;
      if (matchesFilter(filter, vectors.metadataOf(key)!)) matched++;
    }
    sampled = Math.min(sampled, thresholds.selectivitySampleSize);
  }
  return Math.round((matched / sampled) * candidates);
}

function approximateThenExact(
  vectors: CollectionVectors,
  query: CollectionQuery,
  allowedEstimate: number,
  isAllowed: (key: number) => boolean,
  thresholds: SearchThresholds,
): VectorHit[] {
  const { unitQuery, topK } = query;
  const fraction = Math.max(allowedEstimate, 1) / vectors.size;
  let requested = Math.min(vectors.size, Math.max(topK * thresholds.oversampling, Math.ceil((topK * 2) / fraction)));
  for (;;) {
    const keys = vectors.approximateNearestKeys(unitQuery, requested);
    const hits = keys.filter(isAllowed).map((key) => ({ key, score: vectors.similarity(unitQuery, key) }));
    const exhausted = requested >= vectors.size;
    // The graph returned every row: its answer is the exact one.
    if (hits.length >= topK || keys.length === vectors.size) return hits.sort(compareHits).slice(0, topK);
    if (exhausted) break;
    requested = Math.min(vectors.size, requested * thresholds.oversampling);
  }
  // Rows unreachable in the graph (rare, after many removals) or a filter far more selective than
  // its sample suggested: the exact scan answers correctly.
  return vectors.exactSearchKeys(unitQuery, filterKeys(vectors.keys(), isAllowed), topK);
}

function* filterKeys(keys: Iterable<number>, isAllowed: (key: number) => boolean): IterableIterator<number> {
  for (const key of keys) if (isAllowed(key)) yield key;
}
