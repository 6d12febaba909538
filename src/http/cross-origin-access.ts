import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * CORS for the origins in CORS_ORIGINS, so that a web app (a chat page, an admin UI on its own dev
 * server) can call the API from the browser; without it the browser keeps every response from the
 * page. Listed origins may send the session cookie too (credentials); `*` allows any origin with
 * API keys only, as browsers send no cookie to a wildcard. The headers go on error responses as
 * well, so the page can read their `detail`.
 */
export const crossOriginAccess = fp(async (app: FastifyInstance, { origins }: { origins: string[] | '*' }) => {
  if (origins !== '*' && origins.length === 0) return;
  await app.register(cors, {
    origin: origins,
    credentials: origins !== '*',
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'idempotency-key', 'x-request-id'],
    exposedHeaders: ['retry-after', 'idempotent-replayed', 'content-disposition'],
    // Browsers cap it lower (Chromium at 2 hours); ten minutes spares a preflight before most requests.
    maxAge: 600,
  });
}, { name: 'cross-origin-access' });
