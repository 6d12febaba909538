import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requireActor } from '../http/authenticate.js';
import { ANY_CALLER, OPEN, SESSION } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { User } from '../db/entities/index.js';
import { NotFoundError } from '../errors.js';
import { actorScopes, type UserActor } from './actor.js';
import { LogoutAll, Preferences, SetupStatus, UserView, Whoami } from './auth-response-schemas.js';
import { pinnedCollectionDeleted } from './api-keys.service.js';
import { mergePreferences, preferencesPatchFromBody, readPreferences } from './preferences.service.js';
import { clearSessionCookie, setSessionCookie } from './session-cookie.js';
import { createSession, revokeSession, revokeUserSessions } from './sessions.service.js';
import { assertSetupPending, authenticateUser, changePassword, needsSetup, serializeUser, setupFirstAdmin } from './users.service.js';

const Credentials = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
}, { additionalProperties: false });

const SetupBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  password: Type.String({ maxLength: 1024 }),
  display_name: Type.Optional(Type.String({ maxLength: 255 })),
}, { additionalProperties: false });

// Any object: preferencesPatchFromBody reads `{data}` or a bare object.
const PreferencesBody = Type.Object({}, { additionalProperties: true });
const PasswordBody = Type.Object({
  current_password: Type.String({ maxLength: 1024 }),
  new_password: Type.String({ maxLength: 1024 }),
}, { additionalProperties: false });

export const authRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { db, settings, passwords } = services;
  const tags = ['auth'];

  app.get('/v1/auth/setup-status', { config: { ...OPEN, openapi: { response: SetupStatus } }, schema: { tags, summary: 'Whether the first admin still has to be created' } }, async () => ({
    needs_setup: await needsSetup(db.fork()),
  }));

  app.post('/v1/auth/setup', {
    config: { ...OPEN, openapi: { success: 201, errors: [409], response: UserView } },
    schema: { tags, summary: 'Create the first admin (first run only; 409 afterwards)', body: SetupBody },
    // After setup any call is a 409 (spec 3): checked before the body is parsed, so an invalid one is no 400.
    onRequest: async () => assertSetupPending(db.fork()),
  }, async (request, reply) => {
    const em = db.fork();
    const user = await setupFirstAdmin(em, passwords, request.body);
    await setSessionCookie(reply, settings, await createSession(em, user.id, await settings.get<number>('session_ttl_hours')));
    return reply.code(201).send(serializeUser(user));
  });

  app.post('/v1/auth/login', { config: { ...OPEN, openapi: { errors: [401], response: UserView } }, schema: { tags, summary: 'Log in; sets the session cookie', body: Credentials } }, async (request, reply) => {
    const em = db.fork();
    const user = await authenticateUser(em, passwords, request.body.email, request.body.password);
    await setSessionCookie(reply, settings, await createSession(em, user.id, await settings.get<number>('session_ttl_hours')));
    return serializeUser(user);
  });

  app.post('/v1/auth/logout', { config: { ...SESSION, openapi: { success: 204 } }, schema: { tags, summary: 'End the current session' } }, async (request, reply) => {
    const actor = requireActor(request) as UserActor;
    await revokeSession(db.fork(), actor.sessionId);
    await clearSessionCookie(reply, settings);
    return reply.code(204).send();
  });

  app.post('/v1/auth/logout-all', { config: { ...SESSION, openapi: { response: LogoutAll } }, schema: { tags, summary: 'End every session of the current user' } }, async (request, reply) => {
    const actor = requireActor(request) as UserActor;
    const revoked = await revokeUserSessions(db.fork(), actor.userId);
    await clearSessionCookie(reply, settings);
    return reply.send({ revoked_sessions: revoked });
  });

  app.get('/v1/auth/me', { config: { ...ANY_CALLER, openapi: { errors: [404], response: UserView } }, schema: { tags, summary: 'The current user (for an API key: the admin who created it)' } }, async (request) => {
    const actor = requireActor(request);
    const em = db.fork();
    const userId = actor.kind === 'user' ? actor.userId : actor.createdBy;
    const user = userId ? await em.findOne(User, { id: userId }) : null;
    if (!user) throw new NotFoundError('This API key has no owning user');
    return serializeUser(user);
  });

  app.get('/v1/auth/whoami', { config: { ...ANY_CALLER, openapi: { response: Whoami } }, schema: { tags, summary: 'Identity, auth method and, for API keys, scopes and pin' } }, async (request) => {
    const actor = requireActor(request);
    if (actor.kind === 'user') {
      return { auth_method: 'session', user: { id: actor.userId, email: actor.email, role: actor.role }, scopes: actorScopes(actor), collection: null, collection_deleted: false };
    }
    return {
      auth_method: 'api_key',
      api_key: { id: actor.keyId, name: actor.name, prefix: actor.prefix },
      scopes: actor.scopes,
      collection: actor.collection,
      // The pin keeps its name after its collection is deleted; this says the key is refused.
      collection_deleted: await pinnedCollectionDeleted(db.fork(), actor),
    };
  });

  app.post('/v1/auth/password', { config: { ...SESSION, openapi: { response: UserView } }, schema: { tags, summary: 'Change password: revokes every session and sets a fresh cookie', body: PasswordBody } }, async (request, reply) => {
    const actor = requireActor(request) as UserActor;
    const em = db.fork();
    const user = await changePassword(em, passwords, actor, request.body.current_password, request.body.new_password);
    await setSessionCookie(reply, settings, await createSession(em, user.id, await settings.get<number>('session_ttl_hours')));
    return serializeUser(user);
  });

  app.get('/v1/auth/preferences', { config: { ...SESSION, openapi: { response: Preferences } }, schema: { tags, summary: 'Preferences of the current user' } }, async (request) => {
    const actor = requireActor(request) as UserActor;
    return { data: await readPreferences(db.fork(), actor.userId) };
  });

  app.put('/v1/auth/preferences', {
    config: { ...SESSION, openapi: { response: Preferences } },
    schema: { tags, summary: 'Deep-merge preferences (body `{data}` or a bare object)', body: PreferencesBody },
  }, async (request) => {
    const actor = requireActor(request) as UserActor;
    const patch = preferencesPatchFromBody(request.body);
    return { data: await mergePreferences(db.fork(), actor.userId, patch, services.secrets) };
  });
};
