import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { HTTP_URL_FORMAT } from '../http/validation.js';
import { recordAudit } from '../audit/audit.service.js';
import { EMBEDDING_PROVIDERS } from '../collections/collection-input.js';
import { serializePreset } from '../embedding/embedding-presets.service.js';
import { requireActor } from '../http/authenticate.js';
import { page, PageQuery } from '../http/pagination.js';
import { ADMIN_SESSION } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { stringEnum } from '../http/string-enum.js';
import { MAX_EMBEDDING_DIMENSION } from '../vectors/unit-vector.js';
import { EmbeddingPresetPage, EmbeddingPresetTest, EmbeddingPresetView } from './admin-response-schemas.js';

const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const Provider = stringEnum(EMBEDDING_PROVIDERS);
const Name = Type.String({ minLength: 1, maxLength: 255 });
const Model = Type.String({ minLength: 1, maxLength: 255 });
const ApiKey = Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()], { description: 'write-only; null clears the stored key' });
const BaseUrl = Type.Union([Type.String({ format: HTTP_URL_FORMAT, maxLength: 2048 }), Type.Null()], { description: 'API base with its version segment, e.g. http://localhost:11434/v1' });
const Dimension = Type.Integer({ minimum: 2, maximum: MAX_EMBEDDING_DIMENSION });

/** Spec 2.11: name, provider, model, api_key, base_url?, dimension (model and dimension default from the model table). */
const PresetCreateBody = Type.Object({
  name: Name, provider: Provider, model: Type.Optional(Model), api_key: Type.Optional(ApiKey), base_url: Type.Optional(BaseUrl), dimension: Type.Optional(Dimension),
}, { additionalProperties: false });
const PresetUpdateBody = Type.Object({
  name: Type.Optional(Name), provider: Type.Optional(Provider), model: Type.Optional(Model), api_key: Type.Optional(ApiKey),
  base_url: Type.Optional(BaseUrl), dimension: Type.Optional(Dimension),
}, { additionalProperties: false });
/** Spec 2.11: a test takes provider, model, api_key?, base_url?; a dimension, when sent, is checked too. */
const PresetTestBody = Type.Object({
  provider: Provider, model: Type.Optional(Model), api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  base_url: Type.Optional(Type.String({ format: HTTP_URL_FORMAT, maxLength: 2048 })), dimension: Type.Optional(Dimension),
}, { additionalProperties: false });

export const adminEmbeddingPresetRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { db, embeddingPresets: presets } = services;
  const tags = ['admin: embedding presets'];

  const audit = async (actor: ReturnType<typeof requireActor>, action: string, resourceId: string, details: Record<string, unknown> = {}) => {
    const em = db.fork();
    recordAudit(em, actor, { action, resourceType: 'embedding_preset', resourceId, details });
    await em.flush();
  };

  app.get('/v1/admin/embedding-presets', { config: { ...ADMIN_SESSION, openapi: { response: EmbeddingPresetPage } }, schema: { tags, summary: 'List embedding presets (api_key never shown)', querystring: PageQuery } }, async (request) => {
    const { data, total } = await presets.list(request.query.limit, request.query.offset);
    return page(data.map(serializePreset), total, request.query);
  });

  app.post('/v1/admin/embedding-presets', { config: { ...ADMIN_SESSION, openapi: { success: 201, response: EmbeddingPresetView } }, schema: { tags, summary: 'Create a preset; api_key is write-only (has_api_key)', body: PresetCreateBody } }, async (request, reply) => {
    const preset = await presets.create(request.body);
    await audit(requireActor(request), 'embedding_preset.create', preset.id, { name: preset.name, provider: preset.provider, model: preset.model });
    return reply.code(201).send(serializePreset(preset));
  });

  app.post('/v1/admin/embedding-presets/test', {
    config: { ...ADMIN_SESSION, openapi: { response: EmbeddingPresetTest } },
    schema: { tags, summary: 'Embed one text with unsaved settings: {ok, dimension, latency_ms} or {ok: false, error}', body: PresetTestBody },
  }, async (request) => {
    const { provider, model, api_key: apiKey, base_url: baseUrl, dimension } = request.body;
    return presets.test({ provider, model, apiKey, baseUrl, dimension });
  });

  app.get('/v1/admin/embedding-presets/:id', { config: { ...ADMIN_SESSION, openapi: { response: EmbeddingPresetView } }, schema: { tags, summary: 'One embedding preset', params: IdParams } }, async (request) =>
    serializePreset(await presets.get(request.params.id)));

  app.patch('/v1/admin/embedding-presets/:id', { config: { ...ADMIN_SESSION, openapi: { response: EmbeddingPresetView } }, schema: { tags, summary: 'Update a preset; a new provider takes only the api_key and base_url sent with it', params: IdParams, body: PresetUpdateBody } }, async (request) => {
    const preset = await presets.update(request.params.id, request.body);
    await audit(requireActor(request), 'embedding_preset.update', preset.id, { fields: Object.keys(request.body) });
    return serializePreset(preset);
  });

  app.delete('/v1/admin/embedding-presets/:id', { config: ADMIN_SESSION, schema: { tags, summary: 'Delete a preset; collections made from it keep their copied settings', params: IdParams } }, async (request, reply) => {
    await presets.delete(request.params.id);
    await audit(requireActor(request), 'embedding_preset.delete', request.params.id);
    return reply.code(204).send();
  });

  app.post('/v1/admin/embedding-presets/:id/test', {
    config: { ...ADMIN_SESSION, openapi: { response: EmbeddingPresetTest } },
    schema: { tags, summary: 'Embed one text with a saved preset and its stored key', params: IdParams },
  }, async (request) => presets.testSaved(request.params.id));
};
