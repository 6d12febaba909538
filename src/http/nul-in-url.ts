import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { BadRequestError } from '../errors.js';

/**
 * A NUL character (`%00`) in the URL is refused before any route sees it: no parameter accepts
 * one, and PostgreSQL cannot hold one in text, so a search term carrying it (`?q=%00`) was a
 * database error answered with 500.
 */
export const nulInUrl = fp(async (app: FastifyInstance) => {
  app.addHook('onRequest', async (request) => {
    if (/%00/i.test(request.url)) throw new BadRequestError('The URL contains a NUL character (%00), which no parameter accepts');
  });
}, { name: 'nul-in-url', dependencies: ['error-handler'] });
