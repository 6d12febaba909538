import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { actorOwner, actorRights } from '../auth/actor.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { sha256Hex } from '../crypto/tokens.js';
import { IdempotencyRecord } from '../db/entities/index.js';
import type { IdempotencyRecordRow } from '../db/entities/idempotency-record.js';
import { BadRequestError, ConflictError, UnprocessableError } from '../errors.js';
import type { AppServices } from '../services.js';
import { fingerprintMultipartBody } from '../uploads/multipart-files.js';
import { MultipartFingerprint } from '../uploads/multipart-fingerprint.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Top-level fields of the response that hold a secret shown once (a minted API key). The
     * stored copy replayed for an Idempotency-Key has each set to null and flagged
     * `<field>_shown_once: true`, so a secret never sits in idempotency_records for 24 h.
     */
    secretResponseFields?: readonly string[];
  }
  interface FastifyRequest {
    idempotencyRecordId: string | null;
    /** Set for a multipart request that carries an Idempotency-Key; the multipart reader feeds it every part. */
    multipartFingerprint: MultipartFingerprint | null;
  }
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** A stored response is replayed this long; the records are deleted after it (expired-records-sweep.ts). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3_600_000;
/** A first request that never finished (its process died) stops blocking retries after this. */
const ABANDONED_AFTER_MS = 10 * 60_000;

function requestFingerprint(request: FastifyRequest, secrets: SecretBox, body: string): string {
  const path = request.url.split('?')[0] ?? request.url;
  // Keyed: bodies hold passwords and provider keys, which a plain SHA-256 in the table would expose to guessing.
  return secrets.digest(`${request.method}\n${path}\n${body}`);
}

/**
 * The body as fingerprinted before the handler runs. A multipart body is streamed to the handler,
 * so it is first known by type and length only (what a repeat in flight is compared by); once read,
 * its record holds the fingerprint of its parts (`MultipartFingerprint`).
 */
function bodyBeforeHandler(request: FastifyRequest): string {
  const contentType = request.headers['content-type'] ?? '';
  return request.isMultipart() ? `${contentType.split(';')[0]}:${request.headers['content-length']}` : JSON.stringify(request.body ?? null);
}

function multipartPartsBody(parts: string): string {
  return `multipart parts:${parts}`;
}

/** The body of a multipart request by its parts; null when it cannot be read (it then matches no record). */
async function multipartBody(request: FastifyRequest): Promise<string | null> {
  try {
    const parts = await fingerprintMultipartBody(request);
    return parts === null ? null : multipartPartsBody(parts);
  } catch {
    return null;
  }
}

/**
 * The body with each secret field set to null and flagged `<field>_shown_once`; null when the body
 * is not a JSON object, since it then cannot be shown to be free of the secret.
 */
function withoutSecrets(payload: string, secretFields: readonly string[]): string | null {
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const present = secretFields.filter((field) => Object.hasOwn(body, field));
  // An error answer holds no secret and is kept byte for byte.
  if (present.length === 0) return payload;
  const stored: Record<string, unknown> = { ...body };
  for (const field of present) {
    stored[field] = null;
    stored[`${field}_shown_once`] = true;
  }
  return JSON.stringify(stored);
}

/**
 * What is kept of a response for replays, `{body}` (body null when the response has none), or null
 * when nothing is: a 5xx (a retry gets a new try), a streamed body, or a response of a route with
 * secret fields whose secret cannot be withheld.
 */
function keptResponse(statusCode: number, payload: unknown, secretFields: readonly string[]): { body: string | null } | null {
  if (statusCode >= 500) return null;
  if (payload === null || payload === undefined) return { body: null };
  if (typeof payload !== 'string') return null;
  if (secretFields.length === 0) return { body: payload };
  const body = withoutSecrets(payload, secretFields);
  return body === null ? null : { body };
}

/**
 * `Idempotency-Key` on mutating requests (api-contract 1): keyed per caller, the first response
 * (errors included) is replayed for 24 h; a different body is 422, a repeat in flight 409.
 * A 5xx is not kept, so that a client retrying a server error with the same key gets a new try.
 * A secret in the response is not kept either (`secretResponseFields`).
 *
 * A record is replayed only to a caller whose rights are those it had at the first request: the
 * replay comes before the route's own checks (a collection pin is checked by the route), so a key
 * pinned elsewhere since would otherwise be answered with another collection's chunks. With other
 * rights the request is not run again either, since with wider ones it would then run twice: 409.
 */
export const idempotency = fp(async (app: FastifyInstance, options: { services: AppServices }) => {
  const { db, secrets } = options.services;
  app.decorateRequest('idempotencyRecordId', null);
  app.decorateRequest('multipartFingerprint', null);

  /**
   * Whether the request repeats the one of the record. A finished multipart request is compared by
   * its parts, read here (the request is not run, whatever the answer); one in flight by its length.
   */
  async function repeatsRecord(request: FastifyRequest, existing: Pick<IdempotencyRecordRow, 'requestHash' | 'responseStatus'>, fingerprint: string): Promise<boolean> {
    if (existing.responseStatus == null || !request.isMultipart()) return existing.requestHash === fingerprint;
    const body = await multipartBody(request);
    return body !== null && existing.requestHash === requestFingerprint(request, secrets, body);
  }

  // preValidation: the body is parsed but not yet validated, so validation errors are replayed too.
  app.addHook('preValidation', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !MUTATING.has(request.method) || !request.actor) return;
    if (key.length === 0 || key.length > 255) throw new BadRequestError('Idempotency-Key must be 1-255 characters');
    const owner = actorOwner(request.actor);
    const fingerprint = requestFingerprint(request, secrets, bodyBeforeHandler(request));
    const rightsHash = sha256Hex(actorRights(request.actor));
    const em = db.fork();
    const existing = await em.findOne(IdempotencyRecord, { owner, key });
    if (existing) {
      const age = Date.now() - existing.createdAt.getTime();
      const abandoned = existing.responseStatus == null && age > ABANDONED_AFTER_MS;
      if (age > IDEMPOTENCY_RETENTION_MS || abandoned) {
        await em.nativeDelete(IdempotencyRecord, { id: existing.id });
      } else {
        if (!await repeatsRecord(request, existing, fingerprint)) throw new UnprocessableError('Idempotency-Key was already used with a different request');
        // Records from before rights were recorded (null) are replayed as they were.
        if (existing.rightsHash !== null && existing.rightsHash !== rightsHash) {
          throw new ConflictError('Idempotency-Key was first used while this caller had other rights (scopes, collection pin or role); '
            + 'its stored response is not replayed and the request is not run again: send it with a new Idempotency-Key');
        }
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
        requestHash: fingerprint, rightsHash, responseStatus: null, responseBody: null, responseContentType: null, createdAt: new Date(),
      });
    } catch {
      // The unique (owner, key) constraint lost a race with an identical concurrent request.
      throw new ConflictError('A request with this Idempotency-Key is still being processed');
    }
    request.idempotencyRecordId = id;
    if (request.isMultipart()) request.multipartFingerprint = new MultipartFingerprint();
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const id = request.idempotencyRecordId;
    if (!id) return payload;
    request.idempotencyRecordId = null;
    const em = db.fork();
    const kept = keptResponse(reply.statusCode, payload, request.routeOptions.config.secretResponseFields ?? []);
    // A multipart body answered before it was read whole (a refused file) is not kept: its retry runs again.
    const parts = request.multipartFingerprint ? await request.multipartFingerprint.digest() : undefined;
    if (!kept || parts === null) {
      await em.nativeDelete(IdempotencyRecord, { id });
      return payload;
    }
    const contentType = reply.getHeader('content-type');
    await em.nativeUpdate(IdempotencyRecord, { id }, {
      ...(parts === undefined ? {} : { requestHash: requestFingerprint(request, secrets, multipartPartsBody(parts)) }),
      responseStatus: reply.statusCode,
      responseBody: kept.body,
      responseContentType: typeof contentType === 'string' ? contentType : null,
    });
    return payload;
  });
}, { name: 'idempotency', dependencies: ['authenticate'] });

