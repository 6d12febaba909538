/**
 * POST /v1/query: one query over several collections, fused by rank. With `document_ids` the
 * listed documents may lie in any of the collections ("answer from these files" over files a user
 * picked from several knowledge bases): each collection is asked about its own listed documents,
 * and a collection holding none of them is not asked.
 */
import type { CollectionRecord } from '../db/entities/index.js';
import type { SqlRunner } from '../plugins.js';
import { DEFAULT_RRF_K, queryCollection, queryTenant, type QueryResponse, type QueryRuntime } from './collection-query.js';
import { documentsNotFound, type DocumentNotReady } from './document-scope.js';
import type { MultiCollectionQueryInput } from './query-request.js';
import { reciprocalRankFusion } from './reciprocal-rank-fusion.js';

const round = (milliseconds: number) => Math.round(milliseconds * 100) / 100;

export async function queryCollections(runtime: QueryRuntime, collections: CollectionRecord[], input: MultiCollectionQueryInput) {
  const started = performance.now();
  const { collections: _names, document_ids: documentIds, ...options } = input;
  const asked = documentIds ? await listedDocumentsByCollection(runtime.sql, collections, documentIds, input.filters) : undefined;
  const responses: QueryResponse[] = [];
  for (const collection of collections) {
    const listed = asked?.get(collection.id);
    if (asked && !listed) continue;
    responses.push(await queryCollection(runtime, collection, { ...options, ...(listed ? { document_ids: listed } : {}) }));
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
      total_ms: round(performance.now() - started),
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
async function listedDocumentsByCollection(sql: SqlRunner, collections: CollectionRecord[], documentIds: readonly string[], filters: MultiCollectionQueryInput['filters']): Promise<Map<string, string[]>> {
  const listed = [...new Set(documentIds.map((id) => id.toLowerCase()))];
  const tenants = new Map(collections.map((collection) => [collection.id, queryTenant(collection, filters)]));
  const rows = await sql<{ id: string; collection_id: string; tenant: string | null }>(
    'select id, collection_id, tenant from documents where id = any(?::uuid[])',
    [listed],
  );
  const byCollection = new Map<string, string[]>();
  for (const row of rows) {
    const collection = collections.find((candidate) => candidate.id === row.collection_id);
    if (!collection || (collection.tenantField && row.tenant !== tenants.get(collection.id))) continue;
    byCollection.set(collection.id, [...byCollection.get(collection.id) ?? [], row.id]);
  }
  const found = new Set([...byCollection.values()].flat());
  const missing = listed.filter((id) => !found.has(id));
  if (missing.length > 0) throw documentsNotFound(missing, collections);
  return byCollection;
}

function inListedOrder(documentIds: readonly string[], responses: QueryResponse[]): DocumentNotReady[] {
  const notReady = new Map(responses.flatMap((response) => (response.documents_not_ready ?? []).map((document) => [document.id, document] as const)));
  return [...new Set(documentIds.map((id) => id.toLowerCase()))].flatMap((id) => notReady.get(id) ?? []);
}
