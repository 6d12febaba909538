import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { findCollection } from '../collections/collections.service.js';
import { NameParams } from '../collections/collections.routes.js';
import { AppError } from '../errors.js';
import { requireActor } from '../http/authenticate.js';
import { scope } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { queryCollection } from './collection-query.js';
import { queryCollections } from './multi-collection-query.js';
import { BatchQueryBody, CollectionQueryBody, MultiCollectionQueryBody } from './query-request.js';
import { BatchQueryResponse, CollectionQueryResponse, MultiCollectionQueryResponse } from './query-response-schemas.js';

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
    const actor = requireActor(request);
    const names = [...new Set(request.body.collections)];
    const collections = await Promise.all(names.map((name) => findCollection(services.collections, actor, name)));
    return queryCollections(queryRuntime, collections, request.body);
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
