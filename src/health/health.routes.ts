import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DATABASE_KINDS } from '../db/database.js';
import { stringEnum } from '../http/string-enum.js';
import { OPEN } from '../http/route-access.js';
import type { AppServices } from '../services.js';

const Liveness = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false });
const DiskSpace = Type.Object({
  free_bytes: Type.Union([Type.Integer(), Type.Null()], { description: 'free on the disk holding DATA_DIR; null when it cannot be read' }),
  min_free_bytes: Type.Integer({ description: 'MIN_FREE_DISK_MB' }),
  writes_refused: Type.Boolean({ description: 'uploads and vector upserts are refused (507) and ingestion waits until space is freed' }),
  database_free_bytes: Type.Optional(Type.Integer({
    description: 'space the embedded database holds free inside its files (deleted rows, once vacuumed), counted as room; given only when the disk alone has less than the minimum',
  })),
}, { additionalProperties: false });

const Readiness = Type.Object({
  status: Type.Literal('ready'),
  database: stringEnum(DATABASE_KINDS, { description: 'the database backend' }),
  disk: Type.Optional(DiskSpace),
}, { additionalProperties: false });

export const healthRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get('/health', { config: { ...OPEN, openapi: { response: Liveness } }, schema: { tags: ['health'], summary: 'Liveness' } }, async () => ({ status: 'ok' }));

  app.get('/health/ready', { config: { ...OPEN, openapi: { errors: [503], response: Readiness } }, schema: { tags: ['health'], summary: 'Readiness: the database answers' } }, async (request, reply) => {
    try {
      await services.db.ping();
      // Still ready while the disk is nearly full: queries and deletes go on.
      const disk = await services.diskSpace.state();
      return { status: 'ready', database: services.db.kind, ...(disk ? { disk } : {}) };
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check failed');
      return reply.code(503).send({ detail: 'Database unreachable', status: 'unavailable', database: services.db.kind });
    }
  });
};
