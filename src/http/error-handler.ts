import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnavailable } from '../db/connection-failures.js';
import { isDeadlock } from '../db/sql-runner.js';
import { AppError } from '../errors.js';
import { isDiskFull } from '../storage/disk-space.js';
import { AllowedMethods } from './allowed-methods.js';
import { readsMultipart } from './json-body.js';
import { describeValidationErrors } from './validation.js';

const FASTIFY_CODES_TO_STATUS: Record<string, number> = {
  FST_REQ_FILE_TOO_LARGE: 413,
  FST_FILES_LIMIT: 413,
  FST_PARTS_LIMIT: 413,
  FST_INVALID_MULTIPART_CONTENT_TYPE: 415,
};

/**
 * busboy's errors for a multipart body that stops mid-part or before its closing boundary (a client
 * that hung up, a cut request) carry no code, only this message.
 */
const TRUNCATED_MULTIPART = /unexpected end of (multipart data|form)/i;

/** What a 503 for an unreachable database asks clients to wait: about a PostgreSQL restart or failover. */
const DATABASE_RETRY_AFTER_SECONDS = 5;

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] ?? request.url;
}

/** What the route reads instead: multipart for uploads (their schema's `consumes`), JSON elsewhere. */
function unsupportedMediaTypeDetail(request: FastifyRequest): string {
  const sent = request.headers['content-type']?.split(';')[0]?.trim() || 'none';
  const expected = readsMultipart(request) ? 'multipart/form-data' : 'application/json';
  return `Content-Type ${sent} is not read by ${request.method} ${pathOf(request)}: send ${expected}`;
}

function methodNotAllowed(reply: FastifyReply, method: string, path: string, allowed: string[]) {
  return reply.code(405).header('allow', allowed.join(', '))
    .send({ detail: `Method ${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, code: 'method_not_allowed' });
}

/**
 * Maps every failure to `{detail}` (api-contract 1): typed service errors, schema validation,
 * Fastify's own body errors, unknown routes (404) and known paths with the wrong method (405).
 * A database that cannot be reached, or a deadlock that ended the request's statement, is a 503
 * with Retry-After, a full disk a 507. Anything else is
 * a 500 that is logged with its request id and never leaks a stack.
 */
export const errorHandler = fp(async (app: FastifyInstance) => {
  const allowedMethods = new AllowedMethods();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) allowedMethods.add(method, route.url);
  });

  // The router matched a :param route with a segment a static sibling owns (GET .../documents/batch
  // reached .../documents/:id): that path is the static route's, and this method is not among its own.
  app.addHook('onRequest', async (request, reply) => {
    const pattern = request.routeOptions.url;
    if (!pattern?.includes(':') || !allowedMethods.mayBeShadowed(pattern)) return;
    const path = pathOf(request);
    const allowed = allowedMethods.at(path);
    if (allowed.some((match) => match.pattern === pattern)) return;
    return methodNotAllowed(reply, request.method, path, allowed.map((match) => match.method));
  });

  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (error instanceof AppError) {
      return reply.code(error.status).send({ detail: error.message, code: error.code, ...(error.extra ?? {}) });
    }
    if (error.validation) {
      // No body at all (none sent, or an empty one with a JSON content type) reads "body must be object".
      const detail = error.validationContext === 'body' && request.body === undefined
        ? `${request.method} ${request.url.split('?')[0]} needs a JSON body and the request has none`
        : describeValidationErrors(error.validation as never, error.validationContext ?? 'request');
      return reply.code(400).send({ detail, code: 'validation_error', errors: error.validation });
    }
    if (!error.code && TRUNCATED_MULTIPART.test(error.message)) {
      return reply.code(400).send({ detail: 'The multipart body ended before its closing boundary: the upload is incomplete, nothing of it was kept', code: 'bad_request' });
    }
    // A client that closed its connection mid-body: Node fails the request stream ("aborted").
    // No one is left to read the answer, and it is not the service's failure.
    if (request.raw.readableAborted) {
      request.log.info({ err: error }, 'the client closed the connection before its request body arrived');
      return reply.code(400).send({ detail: 'The client closed the connection before the request body arrived', code: 'client_closed' });
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      // Fastify says only "Unsupported Media Type"; the client needs to know what to send instead.
      return reply.code(415).send({ detail: unsupportedMediaTypeDetail(request), code: 'unsupported_media_type' });
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // Fastify's "Request body is too large" does not say how large a body may be.
      return reply.code(413).send({ detail: `The request body is larger than ${request.routeOptions.bodyLimit} bytes, the limit (BODY_LIMIT_BYTES)`, code: error.code });
    }
    const status = (error.code && FASTIFY_CODES_TO_STATUS[error.code]) || error.statusCode;
    if (status && status >= 400 && status < 500) {
      return reply.code(status).send({ detail: error.message, code: error.code ?? 'bad_request' });
    }
    if (isDatabaseUnavailable(error)) {
      // Nothing was wrong with the request: a client or a load balancer may try it again.
      request.log.warn({ err: error }, 'request failed: the database is unavailable');
      return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
        .send({ detail: 'The database is unavailable (down, restarting or out of connections); try again shortly', code: 'database_unavailable', request_id: request.id });
    }
    if (isDeadlock(error)) {
      // Another request held rows this one needed while waiting for rows it held; PostgreSQL ended
      // this side. Single statements are retried where they run (sql-runner.ts); this one was not.
      request.log.warn({ err: error }, 'request failed: a deadlock with another request');
      return reply.code(503).header('retry-after', '1')
        .send({ detail: 'The database ended this request to resolve a deadlock with a concurrent request; send it again', code: 'database_deadlock', request_id: request.id });
    }
    if (isDiskFull(error)) {
      // Past MIN_FREE_DISK_MB's check (another process filled the disk, or the check is off), or the database's own disk.
      request.log.error({ err: error }, 'request failed: the disk is full');
      return reply.code(507).send({ detail: 'The disk the service writes to is full (no space left on device): free space and try again', code: 'insufficient_storage', request_id: request.id });
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({ detail: 'Internal server error', code: 'internal_error', request_id: request.id });
  });

  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request);
    const allowed = allowedMethods.at(path).map((match) => match.method);
    // A route of this method that passed the request on found nothing there (a file Swagger UI's static route does not have).
    if (allowed.includes(request.method)) return reply.code(404).send({ detail: `${request.method} ${path} found nothing`, code: 'not_found' });
    if (allowed.length > 0) return methodNotAllowed(reply, request.method, path, allowed);
    return reply.code(404).send({ detail: `Route ${request.method} ${path} not found`, code: 'not_found' });
  });
}, { name: 'error-handler' });
