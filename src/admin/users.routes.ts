import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { UserPage, UserView } from '../auth/auth-response-schemas.js';
import { createUser, deleteUser, getUser, listUsers, serializeUser, updateUser } from '../auth/users.service.js';
import { USER_ROLES } from '../db/entities/index.js';
import { requireActor } from '../http/authenticate.js';
import { page, PageQuery } from '../http/pagination.js';
import { ADMIN_SESSION } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { stringEnum } from '../http/string-enum.js';

const Role = stringEnum(USER_ROLES);
const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });

const UserCreateBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  password: Type.String({ maxLength: 1024 }),
  display_name: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
  role: Type.Optional(Role),
}, { additionalProperties: false });

const UserUpdateBody = Type.Object({
  email: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
  password: Type.Optional(Type.String({ maxLength: 1024 })),
  display_name: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
  role: Type.Optional(Role),
}, { additionalProperties: false });

export const adminUserRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { db, passwords } = services;
  const tags = ['admin: users'];

  app.get('/v1/admin/users', { config: { ...ADMIN_SESSION, openapi: { response: UserPage } }, schema: { tags, summary: 'List users, oldest first', querystring: PageQuery } }, async (request) => {
    const { data, total } = await listUsers(db.fork(), request.query.limit, request.query.offset);
    return page(data.map(serializeUser), total, request.query);
  });

  app.post('/v1/admin/users', { config: { ...ADMIN_SESSION, openapi: { success: 201, response: UserView } }, schema: { tags, summary: 'Create a user (role admin or member); the email must be unused (409)', body: UserCreateBody } }, async (request, reply) => {
    const user = await createUser(db.fork(), passwords, requireActor(request), request.body);
    return reply.code(201).send(serializeUser(user));
  });

  app.get('/v1/admin/users/:id', { config: { ...ADMIN_SESSION, openapi: { response: UserView } }, schema: { tags, summary: 'One user', params: IdParams } }, async (request) =>
    serializeUser(await getUser(db.fork(), request.params.id)));

  app.patch('/v1/admin/users/:id', { config: { ...ADMIN_SESSION, openapi: { response: UserView } }, schema: { tags, summary: 'Change email, display name, role or password; a new password signs the user out everywhere; the last admin cannot be demoted (409)', params: IdParams, body: UserUpdateBody } }, async (request) =>
    serializeUser(await updateUser(db.fork(), passwords, requireActor(request), request.params.id, request.body)));

  app.delete('/v1/admin/users/:id', { config: ADMIN_SESSION, schema: { tags, summary: 'Delete a user; the last admin cannot be deleted (409)', params: IdParams } }, async (request, reply) => {
    await deleteUser(db.fork(), requireActor(request), request.params.id);
    return reply.code(204).send();
  });
};
