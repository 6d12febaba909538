import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { BadRequestError } from '../errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route copes with NUL characters and unpaired surrogates in its body itself: search text
     * is cleaned before it is recorded, and filters refuse them with their own message.
     */
    acceptsUnstorableText?: boolean;
  }
}

// An unpaired UTF-16 surrogate is a code point of category Cs once the string is read as code points.
const UNSTORABLE = /\u0000|\p{Cs}/u;

/** The path of the first string (or key) PostgreSQL cannot store as text or jsonb, if any. */
function findUnstorable(value: unknown, path: string): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? path : null;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const element: unknown = value[index];
      // Numbers are most of a body of vectors: skipped without a call.
      if (typeof element === 'number' || typeof element === 'boolean' || element === null) continue;
      const found = findUnstorable(element, `${path}[${index}]`);
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const key in value) {
      if (UNSTORABLE.test(key)) return `${path} (a field name)`;
      const found = findUnstorable((value as Record<string, unknown>)[key], `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

/**
 * JSON bodies whose strings hold a NUL character or half a surrogate pair are refused before the
 * route runs: PostgreSQL cannot store either (a NUL even breaks PGlite's wire protocol), so a
 * collection description, an API key name or a preference carrying one was a 500.
 */
export const unstorableText = fp(async (app: FastifyInstance) => {
  app.addHook('preValidation', async (request) => {
    if (request.routeOptions.config.acceptsUnstorableText || request.body === undefined || request.isMultipart()) return;
    const path = findUnstorable(request.body, 'body');
    if (path) throw new BadRequestError(`${path} contains a NUL character (\\u0000) or half a surrogate pair, which cannot be stored`);
  });
}, { name: 'unstorable-text', dependencies: ['error-handler'] });
