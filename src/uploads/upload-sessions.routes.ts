import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { findCollection } from '../collections/collections.service.js';
import { NameParams } from '../collections/collections.routes.js';
import { intakeRuntime, ON_DUPLICATE, parseOnDuplicate } from '../documents/document-intake.js';
import { BadRequestError } from '../errors.js';
import { requireActor } from '../http/authenticate.js';
import { NEEDS_DISK_SPACE } from '../http/disk-space-check.js';
import { scope } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { isRefused, receiveMultipartFiles, removeReceived, type ReceivedFile } from './multipart-files.js';
import { SessionFilesForm } from './upload-forms.js';
import { addSessionFiles, cancelSession, completeSession, createSession, findSession, sessionView, touchOpenSession } from './upload-sessions.service.js';
import { stringEnum } from '../http/string-enum.js';
import { PageQuery } from '../http/pagination.js';
import { CompletedUploadSessionView, UploadSessionView } from './upload-session-response-schemas.js';

const SessionParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }), id: Type.String({ format: 'uuid' }) });
const SessionCreateBody = Type.Object({
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'metadata of every document the session creates' })),
  on_duplicate: Type.Optional(stringEnum(ON_DUPLICATE, { description: 'skip (default), replace or keep' })),
}, { additionalProperties: false });

export const uploadSessionRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { sql, files } = services;
  const expiryMs = services.config.uploadSessionExpiryMs;
  const tags = ['upload sessions'];

  app.post('/v1/collections/:name/uploads', {
    config: { ...scope('document:upload'), openapi: { success: 201, bodyOptional: true, response: UploadSessionView } },
    schema: { tags, params: NameParams, body: SessionCreateBody, summary: 'Open an upload session (optional JSON body `{metadata, on_duplicate}`); 201' },
    // The body is optional: no body is an empty one. A JSON `null` is a body, and not an object (a 400).
    preValidation: async (request) => {
      if (request.body === undefined) request.body = {};
    },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const metadata = request.body.metadata ?? {};
    const session = await createSession(sql, collection, { metadata, onDuplicate: parseOnDuplicate(request.body.on_duplicate) });
    return reply.code(201).send(await sessionView(sql, collection, session, expiryMs));
  });

  app.put('/v1/collections/:name/uploads/:id/files', {
    config: { ...scope('document:upload'), ...NEEDS_DISK_SPACE, openapi: { body: SessionFilesForm, response: UploadSessionView } },
    schema: {
      tags, params: SessionParams, consumes: ['multipart/form-data'],
      summary: 'Add files (multipart `file` parts, streamed to storage). All or nothing: one refused file (415, 413, empty) refuses the request. The answer\'s `files` are the files this request added',
    },
  }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    // Refused before any byte is stored; a session closed while files stream in is caught on insert.
    const session = await touchOpenSession(sql, await findSession(sql, collection, request.params.id), 'take files');
    const { outcomes, fields } = await receiveMultipartFiles(request, {
      files, parsers: services.parsers, collectionId: collection.id, limitBytes: services.config.uploadLimitBytes,
      refusals: 'throw', inlineMaxBytes: 0, partRule: 'Send the files in multipart parts named "file"',
    });
    const received = outcomes.filter((outcome): outcome is ReceivedFile => !isRefused(outcome));
    let added;
    try {
      // A field here was silently ignored: a client sending `metadata` with the files thought it applied.
      const [field] = Object.keys(fields);
      if (field !== undefined) {
        throw new BadRequestError(`Field "${field}" is not taken here: a session's metadata and on_duplicate are set when it is opened (POST .../uploads); this request takes "file" parts only`);
      }
      if (received.length === 0) throw new BadRequestError('No files in the request: send each in a multipart part named "file"');
      added = await addSessionFiles(sql, session, received);
    } catch (error) {
      await removeReceived(files, outcomes);
      throw error;
    }
    return sessionView(sql, collection, added.session, expiryMs, { ids: added.added });
  });

  app.post('/v1/collections/:name/uploads/:id/complete', {
    config: { ...scope('document:upload'), openapi: { success: 202, response: CompletedUploadSessionView } },
    schema: { tags, params: SessionParams, summary: 'Turn the files into documents, in one batch; 202 with the session and one result per file' },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const session = await findSession(sql, collection, request.params.id);
    const { session: completing, documents } = await completeSession(intakeRuntime(services), collection, session);
    return reply.code(202).send({ ...(await sessionView(sql, collection, completing, expiryMs)), documents });
  });

  app.get('/v1/collections/:name/uploads/:id', {
    config: { ...scope('document:read'), openapi: { response: UploadSessionView } },
    schema: {
      tags, params: SessionParams, querystring: PageQuery,
      summary: 'The session: status, file_count and total_bytes, a page of its files in upload order (`limit`, `offset`) and, once completed, its batch',
    },
  }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return sessionView(sql, collection, await findSession(sql, collection, request.params.id), expiryMs, request.query);
  });

  app.delete('/v1/collections/:name/uploads/:id', {
    config: scope('document:delete'),
    schema: { tags, params: SessionParams, summary: 'Cancel an open session and remove its stored files' },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    await cancelSession(sql, files, await findSession(sql, collection, request.params.id));
    return reply.code(204).send();
  });
};
