import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { embeddingCatalog } from '../embedding/embedding-catalog.js';
import { page, PageQuery } from '../http/pagination.js';
import { ANY_CALLER, ANY_UNPINNED_CALLER } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { EmbeddingModelList, InstanceStatsView } from './collection-response-schemas.js';
import { instanceStats } from './instance-stats.js';

export const instanceStatsRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get('/v1/stats', { config: { ...ANY_UNPINNED_CALLER, openapi: { response: InstanceStatsView } }, schema: { tags: ['stats'], summary: 'Instance-wide statistics (refused for pinned keys)' } }, async () => {
    // As analytics and the usage report do: a query answered a moment ago counts.
    await services.queryRuntime.events.flushBeforeRead();
    return instanceStats(services);
  });

  app.get('/v1/embeddings/models', {
    config: { ...ANY_CALLER, openapi: { response: EmbeddingModelList } },
    schema: { tags: ['stats'], summary: 'Embedding models this installation offers, with dimensions and rate-card prices', querystring: PageQuery },
  }, async (request) => {
    const { limit, offset } = request.query;
    const catalog = embeddingCatalog(services.plugins);
    return page(catalog.slice(offset, offset + limit), catalog.length, request.query);
  });
};
