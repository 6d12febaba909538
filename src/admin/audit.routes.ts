import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { listAuditEvents, serializeAuditEvent } from '../audit/audit.service.js';
import { page, PageQuery } from '../http/pagination.js';
import { ADMIN_SESSION } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { AuditEventPage } from './admin-response-schemas.js';

const AuditQuery = Type.Object({
  ...PageQuery.properties,
  action: Type.Optional(Type.String({ maxLength: 128 })),
  actorId: Type.Optional(Type.String({ format: 'uuid' })),
  resourceType: Type.Optional(Type.String({ maxLength: 64 })),
});

export const adminAuditRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get('/v1/admin/audit', { config: { ...ADMIN_SESSION, openapi: { response: AuditEventPage } }, schema: { tags: ['admin: audit'], summary: 'Admin actions, newest first', querystring: AuditQuery } }, async (request) => {
    const { data, total } = await listAuditEvents(services.db.fork(), request.query);
    return page(data.map(serializeAuditEvent), total, request.query);
  });
};
