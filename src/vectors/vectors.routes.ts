import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { findCollection } from '../collections/collections.service.js';
import { NameParams } from '../collections/collections.routes.js';
import { requireActor } from '../http/authenticate.js';
import { NEEDS_DISK_SPACE } from '../http/disk-space-check.js';
import { scope } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { deleteRawVectors, upsertRawVectors, VectorDeleteBody, VectorUpsertBody } from './raw-vectors.service.js';
import { VectorDeleteResponse, VectorUpsertResponse } from './vector-response-schemas.js';

export const vectorRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const runtime = { sql: services.sql, indexes: services.indexes, directory: services.collections, writeLocks: services.writeLocks };
  const tags = ['vectors'];

  app.post('/v1/collections/:name/vectors/upsert', {
    config: { ...scope('vector:write'), ...NEEDS_DISK_SPACE, openapi: { response: VectorUpsertResponse } },
    schema: { tags, summary: 'Insert or replace raw vectors (custom embeddings) by id', params: NameParams, body: VectorUpsertBody },
  }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return { upserted: await upsertRawVectors(runtime, collection, request.body) };
  });

  app.post('/v1/collections/:name/vectors/delete', {
    config: { ...scope('vector:delete'), openapi: { response: VectorDeleteResponse } },
    schema: { tags, summary: 'Delete raw vectors by id', params: NameParams, body: VectorDeleteBody },
  }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return { deleted: await deleteRawVectors(runtime, collection, request.body.ids) };
  });
};
