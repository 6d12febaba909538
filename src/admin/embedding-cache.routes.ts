import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { recordAudit } from '../audit/audit.service.js';
import { requireActor } from '../http/authenticate.js';
import { ADMIN_SESSION } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { EmbeddingCachePurge } from './admin-response-schemas.js';

/** The embedding cache among the settings (api-contract 2): emptied on demand, e.g. after a provider changed a model's weights. */
export const adminEmbeddingCacheRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.post('/v1/admin/settings/embedding-cache/purge', {
    config: { ...ADMIN_SESSION, openapi: { response: EmbeddingCachePurge } },
    schema: { tags: ['admin: settings'], summary: 'Empty the embedding cache; answers {purged: <vectors removed>}' },
  }, async (request) => {
    const purged = await services.embeddingCache.purge();
    const em = services.db.fork();
    recordAudit(em, requireActor(request), { action: 'settings.embedding_cache.purge', resourceType: 'settings', details: { purged } });
    await em.flush();
    return { purged };
  });
};
