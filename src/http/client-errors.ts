import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

/** Fastify's `maxParamLength`, the longest path segment a route parameter takes. */
export const MAX_PATH_SEGMENT_LENGTH = 100;

/**
 * Answers a request Node's HTTP parser refused before Fastify saw it (a body cut off by a
 * half-closed connection, a request line that is not HTTP, headers too large, a request too slow
 * to arrive) with the service's error shape, `{detail, code}`: Fastify's own answer was
 * `{"error", "message": "Client Error", "statusCode"}`, against the contract's "every error
 * body is {detail}". As Fastify does, nothing is written to a socket already reset.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, detail] = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? [408, 'request_timeout', 'The request did not arrive in time']
    : error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', 'The request headers are too large']
      : [400, 'bad_request', `The request is not valid HTTP or ended before its body did (${error.code ?? 'parse error'})`];
  const body = JSON.stringify({ detail, code });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}

/**
 * Answers what Fastify's router refuses before any route or hook runs (a path that is not valid
 * percent-encoding, a path segment over `maxParamLength`) in the service's `{detail, code}`
 * shape: Fastify's own answer was `{"error", "code", "message", "statusCode"}`.
 */
export function answerFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_BAD_URL') {
    void reply.code(400).send({ detail: 'The request path is not valid percent-encoded UTF-8', code: 'bad_url' });
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.code(414).send({ detail: `A segment of the request path is longer than ${MAX_PATH_SEGMENT_LENGTH} characters; no name or id is that long`, code: 'path_segment_too_long' });
  } else {
    void reply.code(500).send({ detail: 'The request could not be routed', code: 'internal_error' });
  }
}
