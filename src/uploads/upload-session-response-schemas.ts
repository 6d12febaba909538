/**
 * Success bodies of the upload session routes, as the OpenAPI document shows them
 * (`config.openapi.response`: documentation only, checked against real answers by
 * test/http/openapi-responses-documents.test.ts). They mirror `sessionView`.
 */
import { Type } from 'typebox';
import { AdmittedDocumentView } from '../documents/document-response-schemas.js';
import { ON_DUPLICATE } from '../documents/document-intake.js';
import { stringEnum } from '../http/string-enum.js';
import { Nullable, Timestamp } from '../http/response-schemas.js';
import { SESSION_STATUSES } from './upload-sessions.service.js';


const sessionFields = {
  id: Type.String({ format: 'uuid' }),
  collection: Type.String(),
  status: stringEnum(SESSION_STATUSES, {
    description: 'open, then completing while its documents are ingested and completed once every one is ready or failed; or cancelled',
  }),
  metadata: Type.Record(Type.String(), Type.Unknown(), { description: 'metadata of every document the session creates' }),
  on_duplicate: stringEnum(ON_DUPLICATE),
  batch_id: Nullable(Type.String({ format: 'uuid', description: 'the batch of its documents, once completed' })),
  file_count: Type.Integer({ description: 'every file of the session' }),
  total_bytes: Type.Integer({ description: 'the size of every file of the session' }),
  files: Type.Array(Type.Object({
    id: Type.String({ format: 'uuid' }),
    filename: Type.String(),
    content_type: Type.String(),
    size_bytes: Type.Integer(),
    sha256: Type.String(),
    document_id: Nullable(Type.String({ format: 'uuid', description: 'the document made of the file, once completed' })),
    created_at: Timestamp,
  }, { additionalProperties: false }), { description: 'in the order they were added: a page of them (`limit`, default 50, and `offset` of GET; the first page when completing), or the files a PUT added; removed when the session is cancelled' }),
  created_at: Timestamp,
  updated_at: Timestamp,
  completed_at: Nullable(Timestamp),
  expires_at: Nullable(Type.String({ format: 'date-time', description: 'an open session not given a file by then is cancelled and its files removed (UPLOAD_SESSION_EXPIRY_HOURS after it was opened or a PUT of files last started); null when not open or when sessions do not expire' })),
  expired: Type.Boolean({ description: 'cancelled for being left idle past UPLOAD_SESSION_EXPIRY_HOURS, not by its client' }),
};

export const UploadSessionView = Type.Object(sessionFields, { additionalProperties: false });

/** POST .../uploads/{id}/complete: the session and one result per file, in the order they were added. */
export const CompletedUploadSessionView = Type.Object({
  ...sessionFields,
  documents: Type.Array(AdmittedDocumentView),
}, { additionalProperties: false });
