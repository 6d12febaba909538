import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Collection } from '../db/entities/index.js';
import { page, PageQuery } from '../http/pagination.js';
import { ADMIN_SESSION } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { VectorStorageOverview } from './admin-response-schemas.js';

/**
 * The vector storage overview (spec "Admin", api-contract 2): which store holds each collection's vectors, how many,
 * and for in-process indexes whether they are in memory and how they got there (a graph saved at
 * the last shutdown, or a rebuild from the database).
 */
export const adminVectorStorageRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get('/v1/admin/vector-storage', {
    config: { ...ADMIN_SESSION, openapi: { response: VectorStorageOverview } },
    schema: { tags: ['admin: vector storage'], summary: 'Vector store, vector counts and index state per collection', querystring: PageQuery },
  }, async (request) => {
    const store = services.indexes.vectorStore;
    const [collections, total] = await services.db.fork().findAndCount(Collection, {}, { orderBy: { name: 'asc' }, limit: request.query.limit, offset: request.query.offset });
    const data = [];
    for (const collection of collections) {
      data.push({ collection: collection.name, collection_id: collection.id, dimension: collection.dimension, ...await store.describe(collection.id) });
    }
    return { store: store.name, ...(store.settings ? { settings: store.settings } : {}), ...page(data, total, request.query) };
  });
};
