import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { serializeApiKey } from '../auth/api-keys.service.js';
import { ApiKeyPage, ApiKeyView, MintedApiKey } from '../auth/auth-response-schemas.js';
import { requireActor } from '../http/authenticate.js';
import { page, PageQuery } from '../http/pagination.js';
import { ADMIN_SESSION } from '../http/route-access.js';
import type { AppServices } from '../services.js';

const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
// No minimum length: scopeRefusal explains a short one ("*" alone is "*:*").
const Scopes = Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64 });
const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const Collection = Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()]);

const ApiKeyCreateBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  scopes: Type.Optional(Scopes),
  expires_at: Type.Optional(Timestamp),
  collection: Type.Optional(Collection),
}, { additionalProperties: false });

const ApiKeyUpdateBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  scopes: Type.Optional(Scopes),
  expires_at: Type.Optional(Timestamp),
  collection: Type.Optional(Collection),
  active: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });

export const adminApiKeyRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { db, apiKeys } = services;
  const tags = ['admin: api keys'];

  app.get('/v1/admin/api-keys', { config: { ...ADMIN_SESSION, openapi: { response: ApiKeyPage } }, schema: { tags, summary: 'List API keys (never their plaintext)', querystring: PageQuery } }, async (request) => {
    const { data, total } = await apiKeys.list(db.fork(), request.query.limit, request.query.offset);
    return page(data.map(serializeApiKey), total, request.query);
  });

  app.post('/v1/admin/api-keys', { config: { ...ADMIN_SESSION, secretResponseFields: ['key'], openapi: { success: 201, response: MintedApiKey, errors: [404] } }, schema: { tags, summary: 'Mint a key; the plaintext `key` is in this response only', body: ApiKeyCreateBody } }, async (request, reply) => {
    const { record, key } = await apiKeys.create(db.fork(), requireActor(request), request.body);
    return reply.code(201).send({ ...serializeApiKey(record), key });
  });

  app.get('/v1/admin/api-keys/:id', { config: { ...ADMIN_SESSION, openapi: { response: ApiKeyView } }, schema: { tags, summary: 'One API key (never its plaintext)', params: IdParams } }, async (request) =>
    serializeApiKey(await apiKeys.get(db.fork(), request.params.id)));

  app.patch('/v1/admin/api-keys/:id', { config: { ...ADMIN_SESSION, openapi: { response: ApiKeyView } }, schema: { tags, summary: 'Change the name, scopes, pinned collection, expiry or active flag', params: IdParams, body: ApiKeyUpdateBody } }, async (request) =>
    serializeApiKey(await apiKeys.update(db.fork(), requireActor(request), request.params.id, request.body)));

  app.delete('/v1/admin/api-keys/:id', { config: ADMIN_SESSION, schema: { tags, summary: 'Delete a key; requests with it are refused at once', params: IdParams } }, async (request, reply) => {
    await apiKeys.delete(db.fork(), requireActor(request), request.params.id);
    return reply.code(204).send();
  });

  app.post('/v1/admin/api-keys/:id/rotate', { config: { ...ADMIN_SESSION, secretResponseFields: ['key'], openapi: { response: MintedApiKey } }, schema: { tags, summary: 'New plaintext key, once; the old one stops working', params: IdParams } }, async (request) => {
    const { record, key } = await apiKeys.rotate(db.fork(), requireActor(request), request.params.id);
    return { ...serializeApiKey(record), key };
  });
};
