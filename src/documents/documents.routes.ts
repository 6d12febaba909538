import type { MultipartFile } from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { assertCollectionAccess } from '../auth/actor.js';
import { findCollection } from '../collections/collections.service.js';
import { NameParams } from '../collections/collections.routes.js';
import { Collection, Document, DOCUMENT_STATUSES } from '../db/entities/index.js';
import { BadRequestError, NotFoundError, UnsupportedMediaTypeError } from '../errors.js';
import { requireActor } from '../http/authenticate.js';
import { page, PageQuery } from '../http/pagination.js';
import { scope } from '../http/route-access.js';
import { selectParser, supportedTypesDescription } from '../ingestion/parser-selection.js';
import type { AppServices } from '../services.js';
import type { StoredUpload } from './documents.service.js';
import { removeDocument } from './document-removal.js';
import {
  createDocument, DOCUMENT_SORT_FIELDS, getDocument, listDocuments, serializeDocument, storeUpload,
} from './documents.service.js';
import { parseMetadataField } from './metadata-rules.js';

const literalUnion = <T extends readonly string[]>(values: T) => Type.Union(values.map((value) => Type.Literal(value)));
const DocumentParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }), id: Type.String({ format: 'uuid' }) });
const ListQuery = Type.Object({
  ...PageQuery.properties,
  q: Type.Optional(Type.String({ maxLength: 255 })),
  status: Type.Optional(literalUnion(DOCUMENT_STATUSES)),
  sort: Type.Optional(literalUnion(DOCUMENT_SORT_FIELDS)),
  order: Type.Optional(literalUnion(['asc', 'desc'] as const)),
});

interface ReceivedFile {
  filename: string;
  contentType: string;
  upload: StoredUpload;
}

export const documentRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { db, sql, files, parsers, config } = services;
  const tags = ['documents'];

  /** Reads the multipart body: one `file` part streamed to storage, and the `metadata` field. */
  async function receiveSingleUpload(request: FastifyRequest, collectionId: string): Promise<{ file: ReceivedFile | null; metadataField: string | undefined }> {
    if (!request.isMultipart()) throw new UnsupportedMediaTypeError('Upload as multipart/form-data with a "file" part and an optional "metadata" field');
    let file: ReceivedFile | null = null;
    let metadataField: string | undefined;
    try {
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          if (part.fieldname === 'metadata') metadataField = String(part.value);
          continue;
        }
        const filePart = part as MultipartFile;
        if (filePart.fieldname !== 'file' || file) {
          filePart.file.resume();
          throw new BadRequestError('Send exactly one file, in the "file" part');
        }
        const choice = selectParser(parsers, filePart.filename, filePart.mimetype);
        if (!choice) {
          filePart.file.resume();
          throw new UnsupportedMediaTypeError(`Unsupported file type "${filePart.mimetype}" (${filePart.filename}); supported: ${supportedTypesDescription(parsers)}`);
        }
        const upload = await storeUpload(files, collectionId, filePart.file, () => filePart.file.truncated, config.uploadLimitBytes);
        file = { filename: filePart.filename, contentType: choice.contentType, upload };
      }
    } catch (error) {
      if (file) await files.remove(file.upload.storageKey);
      throw error;
    }
    return { file, metadataField };
  }

  app.post('/v1/collections/:name/documents', {
    config: scope('document:upload'),
    schema: { tags, summary: 'Upload one file (multipart `file`, optional `metadata` JSON string); 202 with the pending document', params: NameParams, consumes: ['multipart/form-data'] },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const { file, metadataField } = await receiveSingleUpload(request, collection.id);
    if (!file) throw new BadRequestError('No file in the upload: send it in a multipart part named "file"');
    try {
      const metadata = parseMetadataField(metadataField);
      const document = await createDocument(sql, services.jobs, collection, { ...file, metadata });
      return reply.code(202).send(serializeDocument(document, collection.name));
    } catch (error) {
      await files.remove(file.upload.storageKey);
      throw error;
    }
  });

  app.get('/v1/collections/:name/documents', { config: scope('document:read'), schema: { tags, params: NameParams, querystring: ListQuery } }, async (request) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const query = { ...request.query, sort: request.query.sort ?? 'created_at', order: request.query.order ?? 'desc' } as const;
    const { data, total } = await listDocuments(em, collection, query);
    return page(data.map((document) => serializeDocument(document, collection.name)), total, request.query);
  });

  app.get('/v1/collections/:name/documents/:id', { config: scope('document:read'), schema: { tags, params: DocumentParams } }, async (request) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return serializeDocument(await getDocument(em, collection, request.params.id), collection.name);
  });

  app.delete('/v1/collections/:name/documents/:id', { config: scope('document:delete'), schema: { tags, params: DocumentParams } }, async (request, reply) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const document = await getDocument(em, collection, request.params.id);
    await removeDocument({ sql, files, indexes: services.indexes, directory: services.collections }, collection, document.id, document.storageKey ?? null);
    return reply.code(204).send();
  });

  app.get('/v1/collections/:name/documents/:id/chunks', { config: scope('document:read'), schema: { tags, params: DocumentParams, querystring: PageQuery } }, async (request) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const document = await getDocument(em, collection, request.params.id);
    const rows = await sql<{ id: string; chunk_index: number; text: string; metadata: Record<string, unknown> }>(
      'select id, chunk_index, text, metadata from chunks where document_id = ? order by chunk_index limit ? offset ?',
      [document.id, request.query.limit, request.query.offset],
    );
    const [count] = await sql<{ total: string | number }>('select count(*) as total from chunks where document_id = ?', [document.id]);
    return page(rows.map((row) => ({ ...row, document_id: document.id, collection: collection.name })), Number(count?.total ?? 0), request.query);
  });

  app.get('/v1/collections/:name/documents/:id/elements', { config: scope('document:read'), schema: { tags, params: DocumentParams, querystring: PageQuery } }, async (request) => {
    const em = db.fork();
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const document = await getDocument(em, collection, request.params.id);
    const rows = await sql<{ id: string; element_index: number; type: string; text: string; heading_path: string[]; page: number | null; metadata: Record<string, unknown> }>(
      'select id, element_index, type, text, heading_path, page, metadata from document_elements where document_id = ? order by element_index limit ? offset ?',
      [document.id, request.query.limit, request.query.offset],
    );
    const [count] = await sql<{ total: string | number }>('select count(*) as total from document_elements where document_id = ?', [document.id]);
    return page(rows.map((row) => ({ ...row, document_id: document.id })), Number(count?.total ?? 0), request.query);
  });

  app.get('/v1/documents/:id', {
    config: scope('document:read'),
    schema: { tags, summary: 'Global document lookup; a pinned key only sees documents of its collection', params: Type.Object({ id: Type.String({ format: 'uuid' }) }) },
  }, async (request) => {
    const em = db.fork();
    const actor = requireActor(request);
    const document = await em.findOne(Document, { id: request.params.id });
    const collection = document ? await em.findOne(Collection, { id: document.collectionId }) : null;
    if (!document || !collection) throw new NotFoundError(`Document ${request.params.id} not found`);
    // The owning collection is resolved first, then the pin is enforced (spec 4.3).
    assertCollectionAccess(actor, collection.name);
    return serializeDocument(document, collection.name);
  });
};
