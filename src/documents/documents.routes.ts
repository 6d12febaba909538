import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { findCollection } from '../collections/collections.service.js';
import { NameParams } from '../collections/collections.routes.js';
import { DOCUMENT_STATUSES } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';
import { requireActor } from '../http/authenticate.js';
import { page, PageQuery } from '../http/pagination.js';
import type { MetadataFilter } from '../search/filters/filter-types.js';
import { parseFilter } from '../search/filters/parse-filter.js';
import { NEEDS_DISK_SPACE } from '../http/disk-space-check.js';
import { scope } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { isRefused, receiveMultipartFiles, removeReceived } from '../uploads/multipart-files.js';
import { SingleUploadForm } from '../uploads/upload-forms.js';
import { admitFiles, intakeRuntime, parseIntakeFields, serializeAdmitted } from './document-intake.js';
import { removeDocument, removalRuntime } from './document-removal.js';
import { listDocumentChunks } from './chunk-store.js';
import { DOCUMENT_SORT_FIELDS, findDocumentInAnyCollection, getDocument, listDocuments, serializeDocument } from './documents.service.js';
import { listDocumentElements, openElementContent, serializeElement } from './element-content.js';
import { reprocessCollection, reprocessDocument } from './reprocessing.js';
import { stringEnum } from '../http/string-enum.js';
import { AdmittedDocumentView, ChunkList, CollectionReprocessResult, DocumentList, DocumentView, ElementList } from './document-response-schemas.js';

const DocumentParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }), id: Type.String({ format: 'uuid' }) });
const DocumentIdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const ElementParams = Type.Object({ ...DocumentParams.properties, element_id: Type.String({ format: 'uuid' }) });
const ListQuery = Type.Object({
  ...PageQuery.properties,
  q: Type.Optional(Type.String({ maxLength: 255 })),
  status: Type.Optional(stringEnum(DOCUMENT_STATUSES)),
  filters: Type.Optional(Type.String({ maxLength: 16_384, description: 'JSON: a filter on the upload metadata, as queries take it ({"source": "wiki"})' })),
  sort: Type.Optional(stringEnum(DOCUMENT_SORT_FIELDS)),
  order: Type.Optional(stringEnum(['asc', 'desc'] as const)),
});

/** `?filters=` holds a JSON filter object; parseFilter names whatever is wrong inside it. */
function metadataFilterParameter(value: string | undefined): MetadataFilter | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new BadRequestError('filters must be a JSON object, e.g. filters={"source": "wiki"} (URL-encoded)');
  }
  return parseFilter(parsed);
}

export const documentRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { db, sql, files } = services;
  const tags = ['documents'];

  app.post('/v1/collections/:name/documents', {
    config: { ...scope('document:upload'), ...NEEDS_DISK_SPACE, openapi: { success: [202, 200], body: SingleUploadForm, response: AdmittedDocumentView } },
    schema: {
      tags, params: NameParams, consumes: ['multipart/form-data'],
      summary: 'Upload one file (multipart `file`, optional `metadata` JSON string and `on_duplicate`: skip | replace | keep); 202 with the pending document, 200 with the existing one when skipped as a duplicate',
    },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const { outcomes, fields } = await receiveMultipartFiles(request, {
      files, parsers: services.parsers, collectionId: collection.id, limitBytes: services.config.uploadLimitBytes,
      refusals: 'throw', inlineMaxBytes: services.config.originalsInDatabaseMaxBytes, maxFiles: 1, partRule: 'Send exactly one file, in the "file" part',
    });
    const [file] = outcomes;
    if (!file || isRefused(file)) throw new BadRequestError('No file in the upload: send it in a multipart part named "file"');
    try {
      const [admitted] = await admitFiles(intakeRuntime(services), collection, [file], { ...parseIntakeFields(fields), batchId: null });
      return reply.code(admitted!.duplicate ? 200 : 202).send(serializeAdmitted(admitted!, collection.name));
    } catch (error) {
      await removeReceived(files, [file]);
      throw error;
    }
  });

  app.get('/v1/collections/:name/documents', { config: { ...scope('document:read'), openapi: { response: DocumentList } }, schema: { tags, summary: 'List documents with their status and progress (q, status, metadata filters, sort, order, paging)', params: NameParams, querystring: ListQuery } }, async (request) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const query = { ...request.query, filter: metadataFilterParameter(request.query.filters), sort: request.query.sort ?? 'created_at', order: request.query.order ?? 'desc' } as const;
    const { data, total } = await listDocuments(em, collection, query);
    return page(data.map((document) => serializeDocument(document, collection.name)), total, request.query);
  });

  app.get('/v1/collections/:name/documents/:id', { config: { ...scope('document:read'), openapi: { response: DocumentView } }, schema: { tags, summary: 'One document with its status and progress; a failure names its stage', params: DocumentParams } }, async (request) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return serializeDocument(await getDocument(em, collection, request.params.id), collection.name);
  });

  app.delete('/v1/collections/:name/documents/:id', { config: scope('document:delete'), schema: { tags, summary: 'Delete a document with its chunks and vectors', params: DocumentParams } }, async (request, reply) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const document = await getDocument(em, collection, request.params.id);
    await removeDocument(removalRuntime(services), collection, document.id, document.storageKey ?? null);
    return reply.code(204).send();
  });

  app.get('/v1/collections/:name/documents/:id/chunks', { config: { ...scope('document:read'), openapi: { response: ChunkList } }, schema: { tags, summary: 'The chunks of the document in order, with text and metadata (heading path)', params: DocumentParams, querystring: PageQuery } }, async (request) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const document = await getDocument(em, collection, request.params.id);
    const { rows, total } = await listDocumentChunks(sql, document.id, request.query);
    return page(rows.map((row) => ({ ...row, document_id: document.id, collection: collection.name })), total, request.query);
  });

  app.get('/v1/collections/:name/documents/:id/elements', { config: { ...scope('document:read'), openapi: { response: ElementList } }, schema: { tags, summary: 'The parsed elements of the document in order (headings, paragraphs, lists, tables, code...)', params: DocumentParams, querystring: PageQuery } }, async (request) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const document = await getDocument(em, collection, request.params.id);
    const { rows, total } = await listDocumentElements(sql, document.id, request.query);
    return page(rows.map((row) => serializeElement(row, collection.name, document.id)), total, request.query);
  });

  app.get('/v1/collections/:name/documents/:id/elements/:element_id/content', {
    config: scope('document:read'),
    schema: { tags, params: ElementParams, summary: 'The stored picture of an image element (multimodal collections), with its content type' },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const document = await getDocument(db.fork(), collection, request.params.id);
    const content = await openElementContent(sql, files, document.id, request.params.element_id);
    reply.type(content.contentType).header('x-content-type-options', 'nosniff').header('cache-control', 'private, max-age=300');
    if (!content.inline) reply.header('content-disposition', 'attachment');
    if (content.sizeBytes !== null) reply.header('content-length', content.sizeBytes);
    return reply.send(content.stream);
  });

  app.post('/v1/collections/:name/documents/:id/reprocess', {
    config: { ...scope('document:upload'), openapi: { success: 202, response: DocumentView } },
    schema: { tags, params: DocumentParams, summary: 'Parse, chunk and embed the document again from its stored original (one waiting for its provider: try it now); 202 with the pending document' },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const document = await reprocessDocument(sql, services.jobs, collection, request.params.id);
    return reply.code(202).send(serializeDocument(document, collection.name));
  });

  app.post('/v1/collections/:name/reprocess', {
    config: { ...scope('document:upload'), openapi: { success: 202, response: CollectionReprocessResult } },
    schema: { tags, params: NameParams, summary: 'Reprocess every ready or failed document of the collection (after a chunking change) and try now those waiting for their provider; 202 `{queued, skipped, retried_now}`' },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return reply.code(202).send(await reprocessCollection(sql, services.jobs, collection));
  });

  app.get('/v1/documents/:id', {
    config: { ...scope('document:read'), openapi: { response: DocumentView } },
    schema: { tags, summary: 'Global document lookup; a pinned key only sees documents of its collection', params: DocumentIdParams },
  }, async (request) => {
    const { document, collection } = await findDocumentInAnyCollection(db.fork(), requireActor(request), request.params.id);
    return serializeDocument(document, collection.name);
  });
};
