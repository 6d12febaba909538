import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requireActor } from '../http/authenticate.js';
import { page, PageQuery } from '../http/pagination.js';
import { scope } from '../http/route-access.js';
import { truncateCollection } from '../documents/document-removal.js';
import type { AppServices } from '../services.js';
import { WindowDays } from '../usage/utc-day-window.js';
import { recordAudit } from '../audit/audit.service.js';
import { CollectionCreateBody, CollectionUpdateBody, CollectionUpdateFields } from './collection-input.js';
import { CollectionAnalyticsView, CollectionList, CollectionStatsView, CollectionView, TruncateResult } from './collection-response-schemas.js';
import { collectionAnalytics, collectionStats } from './collection-stats.js';
import {
  assertUpdatableFields, createCollection, deleteCollection, findCollection, listCollections, serializeCollection, updateCollection,
} from './collections.service.js';

export const NameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) });
const ListQuery = Type.Object({ ...PageQuery.properties, name: Type.Optional(Type.String({ maxLength: 64 })) });
const WindowQuery = Type.Object({ window_days: WindowDays });

export const collectionRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { db, collectionDependencies: deps } = services;
  const tags = ['collections'];

  app.get('/v1/collections', { config: { ...scope('collection:read'), openapi: { response: CollectionList } }, schema: { tags, summary: 'List collections by name (name: a case-insensitive substring; paging); a pinned key sees its own only', querystring: ListQuery } }, async (request) => {
    const { data, total } = await listCollections(db.fork(), requireActor(request), request.query);
    return page(data.map(serializeCollection), total, request.query);
  });

  app.post('/v1/collections', { config: { ...scope('collection:write'), openapi: { success: 201, response: CollectionView } }, schema: { tags, summary: 'Create a collection; a taken name is a 409', body: CollectionCreateBody } }, async (request, reply) => {
    const collection = await createCollection({ em: db.fork(), actor: requireActor(request) }, deps, request.body);
    return reply.code(201).send(serializeCollection(collection));
  });

  app.get('/v1/collections/:name', { config: { ...scope('collection:read'), openapi: { response: CollectionView } }, schema: { tags, summary: 'One collection', params: NameParams } }, async (request) =>
    serializeCollection(await findCollection(services.collections, requireActor(request), request.params.name)));

  app.patch('/v1/collections/:name', {
    config: { ...scope('collection:write'), openapi: { body: CollectionUpdateFields, response: CollectionView } },
    schema: { tags, summary: 'Update the updatable fields; any other field is a 400 naming it', params: NameParams, body: CollectionUpdateBody },
  }, async (request) => {
    const input = assertUpdatableFields(request.body as Record<string, unknown>);
    return serializeCollection(await updateCollection({ em: db.fork(), actor: requireActor(request) }, deps, request.params.name, input));
  });

  app.delete('/v1/collections/:name', { config: scope('collection:delete'), schema: { tags, summary: 'Delete a collection with its documents, chunks and vectors', params: NameParams } }, async (request, reply) => {
    await deleteCollection({ em: db.fork(), actor: requireActor(request) }, deps, request.params.name);
    return reply.code(204).send();
  });

  app.post('/v1/collections/:name/truncate', { config: { ...scope('collection:delete'), openapi: { response: TruncateResult } }, schema: { tags, summary: 'Delete every document and vector, keep the collection', params: NameParams } }, async (request) => {
    const em = db.fork();
    const actor = requireActor(request);
    const collection = await findCollection(services.collections, actor, request.params.name);
    const deleted = await truncateCollection({ sql: services.sql, files: services.files, indexes: services.indexes, directory: services.collections }, collection);
    recordAudit(em, actor, { action: 'collection.truncate', resourceType: 'collection', resourceId: collection.id, details: { deleted_documents: deleted } });
    await em.flush();
    return { deleted_documents: deleted };
  });

  app.get('/v1/collections/:name/stats', { config: { ...scope('collection:read'), openapi: { response: CollectionStatsView } }, schema: { tags, summary: 'Documents by status, chunks, vectors, storage bytes and embedding usage', params: NameParams } }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const embedding = { provider: collection.embeddingProvider, model: collection.embeddingModel, ...await services.embeddingUsage.forCollection(collection.id) };
    return { ...await collectionStats(services.sql, services.indexes, collection), embedding };
  });

  app.get('/v1/collections/:name/analytics', { config: { ...scope('collection:read'), openapi: { response: CollectionAnalyticsView } }, schema: { tags, summary: 'Queries per day, top queries, average latency and zero-result queries over window_days', params: NameParams, querystring: WindowQuery } }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    await services.queryRuntime.events.flushBeforeRead();
    return collectionAnalytics(services.sql, collection, request.query.window_days);
  });
};
