/**
 * POST /v1/query: one query over several collections, fused by rank. With `document_ids` the
 * listed documents may lie in any of the collections ("answer from these files" over files a user
 * picked from several knowledge bases): each collection is asked about its own listed documents,
 * and a collection holding none of them is not asked.
 */
import type { CollectionRecord } from '../db/entities/index.js';
import { DEFAULT_RRF_K, queryCollection, queryTenant, roundMilliseconds, type QueryResponse, type QueryRuntime } from './collection-query.js';
import { documentsNotFound, heldBy, listedDocumentIds, readListedDocuments, type DocumentNotReady, type ListedDocumentRow } from './document-scope.js';
import type { MultiCollectionQueryInput } from './query-request.js';
import { reciprocalRankFusion } from './reciprocal-rank-fusion.js';

export async function queryCollections(runtime: QueryRuntime, collections: CollectionRecord[], input: MultiCollectionQueryInput) {
  const started = performance.now();
  const { collections: _names, document_ids: documentIds, ...options } = input;
  const scopeStarted = performance.now();
  const rows = documentIds ? await readListedDocuments(runtime.sql, documentIds) : undefined;
  const scopeMs = performance.now() - scopeStarted;
  const asked = rows ? listedDocumentsByCollection(rows, collections, documentIds!, input.filters) : undefined;
  const responses: QueryResponse[] = [];
  for (const collection of collections) {
    const listed = asked?.get(collection.id);
    if (asked && !listed) continue;
    responses.push(await queryCollection(runtime, collection, { ...options, ...(listed ? { document_ids: listed } : {}) }, rows));
  }
  // Scores of different collections are not comparable (BM25 statistics differ), ranks are.
  const keyOf = (result: QueryResponse['results'][number]) => `${result.collection}\u0000${result.id}`;
  const byKey = new Map(responses.flatMap((response) => response.results.map((result) => [keyOf(result), result] as const)));
  const fused = reciprocalRankFusion(responses.map((response) => ({ keys: response.results.map(keyOf), weight: 1 })), options.rrf_k ?? DEFAULT_RRF_K);
  const topK = options.top_k ?? Math.max(...collections.map((collection) => collection.defaultTopK));
  // A chunk belongs to one collection, so it is in one list only: scaling by the number of lists
  // makes rank 1 of any collection score 1.0, as rank 1 does in a single-collection query.
  const results = fused.slice(0, topK).map((hit) => ({ ...byKey.get(hit.key)!, score: hit.score * responses.length, collection_score: byKey.get(hit.key)!.score }));
  return {
    results,
    query: input.query,
    collection: null,
    collections: collections.map((collection) => collection.name),
    total: results.length,
    timings: {
      total_ms: roundMilliseconds(performance.now() - started),
      // Read once for every collection: each collection's own scope_ms is only its share of the rows.
      ...(rows ? { scope_ms: roundMilliseconds(scopeMs) } : {}),
      per_collection: Object.fromEntries(responses.map((response) => [response.collection, response.timings])),
    },
    ...(documentIds ? { documents_not_ready: inListedOrder(documentIds, responses) } : {}),
  };
}

/**
 * The listed documents of each collection that holds any (for the query's tenant, where the
 * collection has a tenant field); 404 naming those none of the collections holds, the same answer
 * for another tenant's document as for one that does not exist.
 */
function listedDocumentsByCollection(rows: readonly ListedDocumentRow[], collections: CollectionRecord[], documentIds: readonly string[], filters: MultiCollectionQueryInput['filters']): Map<string, string[]> {
  const tenants = new Map(collections.map((collection) => [collection.id, queryTenant(collection, filters)]));
  const byCollection = new Map<string, Set<string>>();
  for (const row of rows) {
    const collection = collections.find((candidate) => heldBy(row, candidate, tenants.get(candidate.id) ?? null));
    if (collection) byCollection.set(collection.id, (byCollection.get(collection.id) ?? new Set()).add(row.id));
  }
  const found = new Set([...byCollection.values()].flatMap((ids) => [...ids]));
  const missing = listedDocumentIds(documentIds).filter((id) => !found.has(id));
  if (missing.length > 0) throw documentsNotFound(missing, collections);
  return new Map([...byCollection].map(([collectionId, ids]) => [collectionId, [...ids]]));
}

function inListedOrder(documentIds: readonly string[], responses: QueryResponse[]): DocumentNotReady[] {
  const notReady = new Map(responses.flatMap((response) => (response.documents_not_ready ?? []).map((document) => [document.id, document] as const)));
  return listedDocumentIds(documentIds).flatMap((id) => notReady.get(id) ?? []);
}
