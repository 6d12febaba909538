import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { actorOwner } from '../auth/actor.js';
import { sha256Hex } from '../crypto/tokens.js';
import { IdempotencyRecord } from '../db/entities/index.js';
import { BadRequestError, ConflictError, UnprocessableError } from '../errors.js';
import type { AppServices } from '../services.js';

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyRecordId: string | null;
  }
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const RETENTION_MS = 24 * 3_600_000;
/** A first request that never finished (its process died) stops blocking retries after this. */
const ABANDONED_AFTER_MS = 10 * 60_000;

function requestFingerprint(request: FastifyRequest): string {
  const path = request.url.split('?')[0] ?? request.url;
  // Multipart bodies are streamed to the handler, so they are fingerprinted by type and length.
  const body = (request.headers['content-type'] ?? '').startsWith('multipart/') ? `${request.headers['content-type']}:${request.headers['content-length']}` : JSON.stringify(request.body ?? null);
  return sha256Hex(`${request.method}\n${path}\n${body}`);
}

/**
 * `Idempotency-Key` on mutating requests (api-contract 1): keyed per caller, the first response
 * (errors included) is replayed for 24 h; a different body is 422, a repeat in flight 409.
 * A 5xx is not kept, so that a client retrying a server error with the same key gets a new try.
 */
export const idempotency = fp(async (app: FastifyInstance, options: { services: AppServices }) => {
  const { db } = options.services;
  app.decorateRequest('idempotencyRecordId', null);

  // preValidation: the body is parsed but not yet validated, so validation errors are replayed too.
  app.addHook('preValidation', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !MUTATING.has(request.method) || !request.actor) return;
    if (key.length === 0 || key.length > 255) throw new BadRequestError('Idempotency-Key must be 1-255 characters');
    const owner = actorOwner(request.actor);
    const fingerprint = requestFingerprint(request);
    const em = db.fork();
    const existing = await em.findOne(IdempotencyRecord, { owner, key });
    if (existing) {
      const age = Date.now() - existing.createdAt.getTime();
      const abandoned = existing.responseStatus == null && age > ABANDONED_AFTER_MS;
      if (age > RETENTION_MS || abandoned) {
        await em.nativeDelete(IdempotencyRecord, { id: existing.id });
      } else {
        if (existing.requestHash !== fingerprint) throw new UnprocessableError('Idempotency-Key was already used with a different request');
        if (existing.responseStatus == null) throw new ConflictError('A request with this Idempotency-Key is still being processed');
        reply.header('idempotent-replayed', 'true');
        if (existing.responseContentType) reply.header('content-type', existing.responseContentType);
        return reply.code(existing.responseStatus).send(existing.responseBody ?? undefined);
      }
    }
    const id = randomUUID();
    try {
      await em.insert(IdempotencyRecord, {
        id, owner, key, method: request.method, path: request.url.split('?')[0] ?? request.url,
        requestHash: fingerprint, responseStatus: null, responseBody: null, responseContentType: null, createdAt: new Date(),
      });
    } catch {
      // The unique (owner, key) constraint lost a race with an identical concurrent request.
      throw new ConflictError('A request with this Idempotency-Key is still being processed');
    }
    request.idempotencyRecordId = id;
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const id = request.idempotencyRecordId;
    if (!id) return payload;
    request.idempotencyRecordId = null;
    const em = db.fork();
    if (reply.statusCode >= 500 || (payload !== null && payload !== undefined && typeof payload !== 'string')) {
      await em.nativeDelete(IdempotencyRecord, { id });
      return payload;
    }
    const contentType = reply.getHeader('content-type');
    await em.nativeUpdate(IdempotencyRecord, { id }, {
      responseStatus: reply.statusCode,
      responseBody: (payload as string | undefined) ?? null,
      responseContentType: typeof contentType === 'string' ? contentType : null,
    });
    return payload;
  });
}, { name: 'idempotency', dependencies: ['authenticate'] });

export async function purgeExpiredIdempotencyRecords(services: AppServices): Promise<number> {
  return services.db.fork().nativeDelete(IdempotencyRecord, { createdAt: { $lt: new Date(Date.now() - RETENTION_MS) } });
}
