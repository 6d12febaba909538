import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { OPEN } from '../http/route-access.js';
import type { AppServices } from '../services.js';

export const healthRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get('/health', { config: OPEN, schema: { tags: ['health'], summary: 'Liveness' } }, async () => ({ status: 'ok' }));

  app.get('/health/ready', { config: { ...OPEN, openapi: { errors: [503] } }, schema: { tags: ['health'], summary: 'Readiness: the database answers' } }, async (request, reply) => {
    try {
      await services.db.ping();
      return { status: 'ready', database: services.db.kind };
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check failed');
      return reply.code(503).send({ detail: 'Database unreachable', status: 'unavailable', database: services.db.kind });
    }
  });
};
