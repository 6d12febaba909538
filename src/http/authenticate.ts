import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { assertAccess, type Actor, type RouteAccess } from '../auth/actor.js';
import { resolveSession } from '../auth/sessions.service.js';
import { ForbiddenError, UnauthorizedError } from '../errors.js';
import type { AppServices } from '../services.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route. Every /v1 route must declare it (checked at start-up). */
    access?: RouteAccess;
  }
  interface FastifyRequest {
    /** The authenticated caller; null only on open routes. */
    actor: Actor | null;
  }
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The authenticated caller of a route that is not open. */
export function requireActor(request: FastifyRequest): Actor {
  if (!request.actor) throw new UnauthorizedError();
  return request.actor;
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const token = /^bearer +(\S+) *$/i.exec(header)?.[1];
  if (!token) throw new UnauthorizedError('Authorization header must be "Bearer <API key>"');
  return token;
}

/**
 * A cookie-authenticated browser request that changes something must come from our own origin or
 * one CORS_ORIGINS lists: SameSite=Lax already stops most cross-site POSTs, this stops the rest
 * (e.g. same-site subdomains). `*` trusts no origin for cookies.
 */
function assertSameOrigin(request: FastifyRequest, trustedOrigins: string[] | '*'): void {
  const origin = request.headers.origin;
  if (!origin || !MUTATING.has(request.method)) return;
  let originHost: string;
  let requestHost: string;
  try {
    const originUrl = new URL(origin);
    if (trustedOrigins !== '*' && trustedOrigins.includes(originUrl.origin)) return;
    originHost = originUrl.host;
    // Parsed the same way, so that a default port (":80") compares equal to none.
    requestHost = new URL(`${originUrl.protocol}//${request.headers.host ?? ''}`).host;
  } catch {
    throw new ForbiddenError('Cross-origin request refused');
  }
  if (originHost !== requestHost) throw new ForbiddenError('Cross-origin request refused');
}

export const authenticate = fp(async (app: FastifyInstance, options: { services: AppServices }) => {
  const { services } = options;
  const trustedOrigins = services.config.corsOrigins;
  app.decorateRequest('actor', null);

  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/v1') && !route.config?.access) {
      throw new Error(`Route ${String(route.method)} ${route.url} declares no access rule`);
    }
  });

  app.addHook('onRequest', async (request) => {
    const access = request.routeOptions.config.access;
    if (!access) return;
    // Open routes that change something (login, setup) set a session cookie: not for another site.
    if (access.kind === 'open') return assertSameOrigin(request, trustedOrigins);
    const token = bearerToken(request);
    let actor: Actor | null = null;
    if (token !== undefined) {
      actor = await services.apiKeys.authenticate(services.db.fork, token);
      if (!actor) throw new UnauthorizedError('Invalid, expired or inactive API key');
    } else {
      const cookieName = await services.settings.get<string>('session_cookie_name');
      const cookie = request.cookies[cookieName];
      if (cookie) {
        const session = await resolveSession(services.db.fork(), cookie);
        if (!session) throw new UnauthorizedError('Session expired or revoked; log in again');
        assertSameOrigin(request, trustedOrigins);
        actor = { kind: 'user', userId: session.user.id, email: session.user.email, role: session.user.role, sessionId: session.sessionId };
      }
    }
    if (!actor) throw new UnauthorizedError('Authentication required: send a session cookie or "Authorization: Bearer <API key>"');
    assertAccess(actor, access);
    request.actor = actor;
  });
}, { name: 'authenticate', dependencies: ['error-handler'] });
