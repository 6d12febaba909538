import type { FastifyInstance, FastifyRequest } from 'fastify';
import { excessNestingDetail } from '../db/storable-values.js';
import { BadRequestError } from '../errors.js';
import { parsesAsJson } from '../parsing/content-sniffing.js';

/**
 * The JSON body parser. Many HTTP clients send `Content-Type: application/json` on every request,
 * a DELETE or a bodyless POST (truncate, logout, opening an upload session) included, and Fastify
 * refused that empty body with a 400. An empty body is no body, as without the header: a route
 * whose schema needs a body still answers 400 (error-handler.ts words it). Anything else goes to
 * Fastify's own parser, with its prototype-poisoning protection (secure-json-parse) and the body
 * limit (BODY_LIMIT_BYTES), and is refused when it nests deeper than MAX_JSON_DEPTH.
 */
export function acceptJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? 'error', app.initialConfig.onConstructorPoisoning ?? 'error');
  app.addContentTypeParser<string>('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body.length === 0) return done(null, undefined);
    return parseJson(request, body, (error, parsed) => {
      // Fastify words a refused `__proto__` key as it words broken JSON, which this body is not.
      const poisoned = error && parsesAsJson(body);
      if (poisoned) return done(new BadRequestError('The body holds a "__proto__" key, or "constructor" with "prototype" in it: such keys are refused, as they could change the objects the service builds from the body'));
      const tooDeep = error ? null : excessNestingDetail(parsed, 'The body');
      done(tooDeep ? new BadRequestError(tooDeep) : error, parsed);
    });
  });

  // A route that takes no body ignored one: `{"confirm": false}` on truncate still truncated.
  // An empty object is kept as no body, since some clients send `{}` with every POST.
  app.addHook('preValidation', async (request) => {
    const { body } = request;
    // is404: no route at all, which the not-found handler answers as such.
    if (body === undefined || request.is404 || request.routeOptions.schema?.body !== undefined || isEmptyObject(body)) return;
    // Upload routes read multipart themselves, and answer a JSON body with their own 415.
    if (readsMultipart(request)) return;
    if (request.headers['content-type']?.toLowerCase().startsWith('multipart/')) return;
    const fields = body !== null && typeof body === 'object' && !Array.isArray(body) ? `; it has ${Object.keys(body).map((key) => JSON.stringify(key)).join(', ')}` : '';
    throw new BadRequestError(`${request.method} ${request.url.split('?')[0]} takes no body${fields}`);
  });
}

/** An upload route: its schema says it consumes multipart/form-data, which it reads itself. */
export function readsMultipart(request: FastifyRequest): boolean {
  return (request.routeOptions.schema as { consumes?: string[] } | undefined)?.consumes?.includes('multipart/form-data') ?? false;
}

function isEmptyObject(value: unknown): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0;
}
