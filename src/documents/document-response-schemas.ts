/**
 * Success bodies of the document, chunk, element and batch routes, as the OpenAPI document shows
 * them (`config.openapi.response`: documentation only, checked against real answers by
 * test/http/openapi-responses-documents.test.ts). Each mirrors the function that builds the body.
 */
import { Type } from 'typebox';
import { DOCUMENT_STATUSES } from '../db/entities/index.js';
import { stringEnum } from '../http/string-enum.js';
import { Nullable, PageOf, Timestamp } from '../http/response-schemas.js';
import { BATCH_ENTRY_STATUSES, BATCH_SOURCES } from './batches.service.js';

const JsonObject = Type.Record(Type.String(), Type.Unknown());

/** A document record (`serializeDocument`): the one shape every route answering a document shares. */
const documentFields = {
  id: Type.String({ format: 'uuid' }),
  collection: Type.String({ description: 'the collection name' }),
  batch_id: Nullable(Type.String({ format: 'uuid', description: 'the batch or upload session it came in' })),
  filename: Type.String(),
  content_type: Type.String(),
  size_bytes: Type.Integer(),
  sha256: Type.String(),
  metadata: Type.Record(Type.String(), Type.Unknown(), { description: 'the upload metadata' }),
  title: Nullable(Type.String()),
  source_metadata: Type.Record(Type.String(), Type.Unknown(), { description: 'what the file says about itself, as its parser read it' }),
  status: stringEnum(DOCUMENT_STATUSES),
  progress: Nullable(Type.Object({
    stage: Type.String({ description: 'queued, parsing, chunking, embedding, indexing, done' }),
    percent: Type.Number(),
    message: Type.String(),
    next_attempt_at: Type.Optional(Type.String({ format: 'date-time', description: 'when a document waiting for another attempt (its provider unavailable) is tried next' })),
  }, { additionalProperties: false })),
  error: Nullable(Type.String({ description: 'why ingestion failed' })),
  chunk_count: Type.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
  processed_at: Nullable(Timestamp),
};

export const DocumentView = Type.Object(documentFields, { additionalProperties: false });

export const DocumentList = PageOf(DocumentView);

/** An upload's answer (`serializeAdmitted`): the record, whether it was a duplicate, and what `replace` deleted. */
export const AdmittedDocumentView = Type.Object({
  ...documentFields,
  duplicate: Type.Boolean({ description: 'an existing copy was kept and nothing new stored (on_duplicate skip)' }),
  replaced_document_ids: Type.Optional(Type.Array(Type.String({ format: 'uuid' }), { description: 'documents on_duplicate replace deleted; absent when none' })),
}, { additionalProperties: false });

/** A chunk's metadata, as listed and as returned by queries (src/ingestion/ingestion-rows.ts). */
export const ChunkMetadata = Type.Record(Type.String(), Type.Unknown(), {
  description: 'the upload (or upsert) metadata, the filterable values the file states of itself, and on a document\'s chunks its own keys: '
    + 'heading_path, page, table_header, element_types (the types of the elements it holds text of) and code_languages',
});

export const ChunkView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  chunk_index: Type.Integer(),
  text: Type.String(),
  metadata: ChunkMetadata,
  document_id: Type.String({ format: 'uuid' }),
  collection: Type.String(),
}, { additionalProperties: false });

export const ChunkList = PageOf(ChunkView);

/** A parsed element (`serializeElement`); image elements add the fields marked optional. */
export const ElementView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  element_index: Type.Integer(),
  type: Type.String({ description: 'heading, paragraph, table, image, ...' }),
  text: Type.String(),
  heading_path: Type.Array(Type.String(), { description: 'the headings the element sits under, outermost first' }),
  page: Nullable(Type.Integer()),
  metadata: JsonObject,
  document_id: Type.String({ format: 'uuid' }),
  content_type: Type.Optional(Nullable(Type.String())),
  size_bytes: Type.Optional(Nullable(Type.Integer())),
  content_url: Type.Optional(Nullable(Type.String({ description: 'where the stored picture is read; null when none is stored' }))),
  caption: Type.Optional(Nullable(Type.String())),
  caption_status: Type.Optional(Nullable(Type.String())),
  caption_error: Type.Optional(Nullable(Type.String())),
}, { additionalProperties: false });

export const ElementList = PageOf(ElementView);

export const CollectionReprocessResult = Type.Object({
  queued: Type.Integer({ description: 'ready or failed documents queued again' }),
  skipped: Type.Integer({ description: 'documents left as they were, already pending or processing' }),
  retried_now: Type.Integer({ description: 'pending documents that were waiting for their embedding provider, tried now' }),
}, { additionalProperties: false });

/** A file of a batch refused at upload (`serializeRefused`): no document was stored. */
const RejectedFile = Type.Object({
  filename: Type.String(),
  status: Type.Literal('rejected'),
  error: Type.Object({ status: Type.Integer({ description: 'the HTTP status a single upload would have had' }), detail: Type.String() }, { additionalProperties: false }),
}, { additionalProperties: false });

/** POST .../documents/batch (`serializeNewBatch`): one result per file, in request order. */
export const NewBatchView = Type.Object({
  batch_id: Type.String({ format: 'uuid' }),
  collection: Type.String(),
  total: Type.Integer(),
  documents: Type.Array(Type.Union([AdmittedDocumentView, RejectedFile])),
}, { additionalProperties: false });

const batchSummaryFields = {
  batch_id: Type.String({ format: 'uuid' }),
  total: Type.Integer({ description: 'files of the batch, refused ones included' }),
  by_status: Type.Object(
    Object.fromEntries(BATCH_ENTRY_STATUSES.map((status) => [status, Type.Integer()])) as Record<(typeof BATCH_ENTRY_STATUSES)[number], ReturnType<typeof Type.Integer>>,
    { additionalProperties: false, description: 'document statuses, plus files refused at upload and documents deleted since' },
  ),
  done: Type.Boolean({ description: 'no document of the batch is pending or processing' }),
};

/** GET .../batches/{id}/status (`batchStatus`). */
export const BatchStatusView = Type.Object(batchSummaryFields, { additionalProperties: false });

/** GET .../batches/{id} (`batchDetails`): the current record of each file, in upload order. */
export const BatchView = Type.Object({
  ...batchSummaryFields,
  collection: Type.String(),
  source: stringEnum(BATCH_SOURCES, { description: 'a batch upload or a completed upload session' }),
  created_at: Timestamp,
  documents: Type.Array(Type.Union([
    Type.Object({ ...documentFields, duplicate: Type.Boolean() }, { additionalProperties: false }),
    RejectedFile,
    Type.Object({ filename: Type.String(), id: Type.String({ format: 'uuid' }), status: Type.Literal('deleted') }, { additionalProperties: false, description: 'a document deleted since' }),
  ])),
}, { additionalProperties: false });
