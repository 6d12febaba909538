import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DATABASE_KINDS } from '../db/database.js';
import { literalUnion } from '../http/literal-union.js';
import { OPEN } from '../http/route-access.js';
import type { AppServices } from '../services.js';

const Liveness = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false });
const Readiness = Type.Object({
  status: Type.Literal('ready'),
  database: literalUnion(DATABASE_KINDS, { description: 'the database backend' }),
}, { additionalProperties: false });

export const healthRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get('/health', { config: { ...OPEN, openapi: { response: Liveness } }, schema: { tags: ['health'], summary: 'Liveness' } }, async () => ({ status: 'ok' }));

  app.get('/health/ready', { config: { ...OPEN, openapi: { errors: [503], response: Readiness } }, schema: { tags: ['health'], summary: 'Readiness: the database answers' } }, async (request, reply) => {
    try {
      await services.db.ping();
      return { status: 'ready', database: services.db.kind };
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check failed');
      return reply.code(503).send({ detail: 'Database unreachable', status: 'unavailable', database: services.db.kind });
    }
  });
};
