import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { BadRequestError } from '../errors.js';
import { findUnstorableText, unstorableTextDetail } from '../text/storable-text.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route copes with NUL characters and unpaired surrogates in its body itself: search text
     * is cleaned before it is recorded, and filters refuse them with their own message.
     */
    acceptsUnstorableText?: boolean;
  }
}

/**
 * Text PostgreSQL cannot store is refused before any route sees it: a NUL character (`%00`) in
 * the URL, which no parameter accepts (`?q=%00` was a database error answered with 500), and a
 * JSON body whose strings hold a NUL or half a surrogate pair (a NUL even breaks PGlite's wire
 * protocol; a collection description, an API key name or a preference carrying one was a 500).
 * Multipart fields are checked where they are parsed (parseMetadataField).
 */
export const unstorableText = fp(async (app: FastifyInstance) => {
  app.addHook('onRequest', async (request) => {
    if (/%00/i.test(request.url)) throw new BadRequestError('The URL contains a NUL character (%00), which no parameter accepts');
  });
  app.addHook('preValidation', async (request) => {
    if (request.routeOptions.config.acceptsUnstorableText || request.body === undefined || request.isMultipart()) return;
    const path = findUnstorableText(request.body, 'body');
    if (path) throw new BadRequestError(unstorableTextDetail(path));
  });
}, { name: 'unstorable-text', dependencies: ['error-handler'] });
