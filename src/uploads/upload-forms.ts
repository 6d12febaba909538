import { Type } from 'typebox';
import { ON_DUPLICATE } from '../documents/document-intake.js';
import { stringEnum } from '../http/string-enum.js';

/*
 * The multipart forms of the upload routes as the OpenAPI document shows them (route config
 * `openapi.body`). Documentation only: a body schema would make Fastify validate the stream, which
 * multipart-files.ts reads part by part.
 */

const FilePart = Type.String({ format: 'binary', contentMediaType: 'application/octet-stream' });

const IntakeFields = {
  metadata: Type.Optional(Type.String({ description: 'A JSON object, as a string: metadata of every document the request creates' })),
  on_duplicate: Type.Optional(stringEnum(ON_DUPLICATE, { description: 'A file whose content the collection already holds: skip (default), replace or keep' })),
};

export const SingleUploadForm = Type.Object({ file: { ...FilePart, description: 'The file (exactly one)' }, ...IntakeFields });

export const BatchUploadForm = Type.Object({ file: Type.Array(FilePart, { minItems: 1, description: 'One part named "file" per file' }), ...IntakeFields });

/** Files only: the session's metadata and on_duplicate are set when it is opened. */
export const SessionFilesForm = Type.Object({ file: Type.Array(FilePart, { minItems: 1, description: 'One part named "file" per file' }) });
