import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { findCollection } from '../collections/collections.service.js';
import { NameParams } from '../collections/collections.routes.js';
import { AppError } from '../errors.js';
import { requireActor } from '../http/authenticate.js';
import { scope } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { DEFAULT_RRF_K, queryCollection, type QueryResponse } from './collection-query.js';
import { BatchQueryBody, CollectionQueryBody, MultiCollectionQueryBody } from './query-request.js';
import { BatchQueryResponse, CollectionQueryResponse, MultiCollectionQueryResponse } from './query-response-schemas.js';
import { reciprocalRankFusion } from './reciprocal-rank-fusion.js';

export const queryRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { queryRuntime } = services;
  const tags = ['query'];

  app.post('/v1/collections/:name/query', {
    config: { ...scope('query:read'), acceptsUnstorableValues: true, openapi: { response: CollectionQueryResponse, errors: [502] } },
    schema: { tags, summary: 'Query one collection (semantic, keyword or hybrid)', params: NameParams, body: CollectionQueryBody },
  }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return queryCollection(queryRuntime, collection, request.body);
  });

  app.post('/v1/query', {
    config: { ...scope('query:read'), acceptsUnstorableValues: true, openapi: { response: MultiCollectionQueryResponse, errors: [404, 502] } },
    schema: { tags, summary: 'Query several collections; results are fused by RRF and name their collection', body: MultiCollectionQueryBody },
  }, async (request) => {
    const started = performance.now();
    const actor = requireActor(request);
    const { collections: names, ...options } = request.body;
    const unique = [...new Set(names)];
    const collections = await Promise.all(unique.map((name) => findCollection(services.collections, actor, name)));
    const responses: QueryResponse[] = [];
    for (const collection of collections) responses.push(await queryCollection(queryRuntime, collection, { ...options, query: request.body.query }));
    // Scores of different collections are not comparable (BM25 statistics differ), ranks are.
    const byKey = new Map<string, QueryResponse['results'][number]>(responses.flatMap((response) => response.results.map((result) => [`${result.collection}\u0000${result.id}`, result] as const)));
    const fused = reciprocalRankFusion(responses.map((response) => ({
      keys: response.results.map((result) => `${result.collection}\u0000${result.id}`), weight: 1,
    })), options.rrf_k ?? DEFAULT_RRF_K);
    const topK = options.top_k ?? Math.max(...collections.map((collection) => collection.defaultTopK));
    // A chunk belongs to one collection, so it is in one list only: scaling by the number of lists
    // makes rank 1 of any collection score 1.0, as rank 1 does in a single-collection query.
    const results = fused.slice(0, topK).map((hit) => ({ ...byKey.get(hit.key)!, score: hit.score * responses.length, collection_score: byKey.get(hit.key)!.score }));
    return {
      results,
      query: request.body.query,
      collection: null,
      collections: unique,
      total: results.length,
      timings: {
        total_ms: Math.round((performance.now() - started) * 100) / 100,
        per_collection: Object.fromEntries(responses.map((response) => [response.collection, response.timings])),
      },
    };
  });

  app.post('/v1/batch/query', {
    config: { ...scope('query:read'), acceptsUnstorableValues: true, openapi: { response: BatchQueryResponse } },
    schema: { tags, summary: 'Several queries in one request; each item answers or carries its own error', body: BatchQueryBody },
  }, async (request) => {
    const actor = requireActor(request);
    const results = [];
    for (const { collection: name, ...item } of request.body.queries) {
      try {
        const collection = await findCollection(services.collections, actor, name);
        const response = await queryCollection(queryRuntime, collection, item);
        const { results: itemResults, total, timings, documents_not_ready } = response;
        results.push({ collection: name, query: item.query, results: itemResults, total, timings, ...(documents_not_ready ? { documents_not_ready } : {}) });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        results.push({ collection: name, query: item.query, error: { status: error.status, detail: error.message } });
      }
    }
    return { results };
  });
};
