import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { BadRequestError } from '../errors.js';
import { unstorableValueDetail } from '../db/storable-values.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route copes with values the database cannot store in its body itself: search text is
     * cleaned before it is recorded, filters refuse such text with their own message, and an
     * infinite `min_score` or filter bound is a valid comparison (nothing is stored).
     */
    acceptsUnstorableValues?: boolean;
  }
}

/**
 * Values PostgreSQL cannot store are refused before any route sees them: a NUL character (`%00`)
 * in the URL, which no parameter accepts (`?q=%00` was a database error answered with 500), and a
 * JSON body holding a string with a NUL or half a surrogate pair (a NUL even breaks PGlite's wire
 * protocol; a collection description, an API key name or a preference carrying one was a 500) or
 * a number too large for a double (`"default_min_score": 1e400` was a 500). Multipart fields are
 * checked where they are parsed (parseMetadataField).
 */
export const unstorableValues = fp(async (app: FastifyInstance) => {
  app.addHook('onRequest', async (request) => {
    if (/%00/i.test(request.url)) throw new BadRequestError('The URL contains a NUL character (%00), which no parameter accepts');
  });
  app.addHook('preValidation', async (request) => {
    if (request.routeOptions.config.acceptsUnstorableValues || request.body === undefined || request.isMultipart()) return;
    const detail = unstorableValueDetail(request.body, 'body');
    if (detail) throw new BadRequestError(detail);
  });
}, { name: 'unstorable-values', dependencies: ['error-handler'] });
