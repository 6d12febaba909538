import type { Readable } from 'node:stream';
import { NotFoundError } from '../errors.js';
import type { SqlRunner } from '../plugins.js';
import type { FileStore } from '../storage/file-store.js';

/**
 * Raster image types served inline with their own content type. Anything else a parser reported
 * (SVG can carry script) is served as an attachment of type application/octet-stream, so a
 * stored element can never run in a browser under the service's origin.
 */
const INLINE_IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp', 'image/tiff', 'image/avif']);

export interface ElementContent {
  stream: Readable;
  contentType: string;
  inline: boolean;
  sizeBytes: number | null;
}

export function elementContentUrl(collectionName: string, documentId: string, elementId: string): string {
  return `/v1/collections/${encodeURIComponent(collectionName)}/documents/${documentId}/elements/${elementId}/content`;
}

export async function openElementContent(sql: SqlRunner, files: FileStore, documentId: string, elementId: string): Promise<ElementContent> {
  const [element] = await sql<{ storage_key: string | null; content_type: string | null; size_bytes: string | number | null }>(
    'select storage_key, content_type, size_bytes from document_elements where id = ? and document_id = ?', [elementId, documentId],
  );
  if (!element) throw new NotFoundError(`Element ${elementId} not found in document ${documentId}`);
  if (!element.storage_key) throw new NotFoundError(`Element ${elementId} has no stored content (only image elements of multimodal collections do)`);
  const stream = await files.openRead(element.storage_key).catch(() => {
    throw new NotFoundError(`The content of element ${elementId} is no longer stored`);
  });
  const declared = (element.content_type ?? '').toLowerCase();
  const inline = INLINE_IMAGE_TYPES.has(declared);
  return { stream, contentType: inline ? declared : 'application/octet-stream', inline, sizeBytes: element.size_bytes === null ? null : Number(element.size_bytes) };
}

export interface ElementRow {
  id: string; element_index: number; type: string; text: string; heading_path: string[]; page: number | null; metadata: Record<string, unknown>;
  storage_key: string | null; content_type: string | null; size_bytes: string | number | null;
  caption: string | null; caption_status: string | null; caption_error: string | null;
}

export const ELEMENT_COLUMNS = 'id, element_index, type, text, heading_path, page, metadata, storage_key, content_type, size_bytes, caption, caption_status, caption_error';

/** A page of a document's elements in order, and how many it has. */
export async function listDocumentElements(sql: SqlRunner, documentId: string, page: { limit: number; offset: number }) {
  const rows = await sql<ElementRow>(
    `select ${ELEMENT_COLUMNS} from document_elements where document_id = ? order by element_index limit ? offset ?`,
    [documentId, page.limit, page.offset],
  );
  const [count] = await sql<{ total: string | number }>('select count(*) as total from document_elements where document_id = ?', [documentId]);
  return { rows, total: Number(count?.total ?? 0) };
}

/** An element record; image elements add their picture's type, size and URL, and their caption or why there is none. */
export function serializeElement(row: ElementRow, collectionName: string, documentId: string) {
  const { storage_key: storageKey, content_type: contentType, size_bytes: sizeBytes, caption, caption_status: captionStatus, caption_error: captionError, ...base } = row;
  if (row.type !== 'image') return { ...base, document_id: documentId };
  return {
    ...base,
    document_id: documentId,
    content_type: contentType,
    size_bytes: sizeBytes === null ? null : Number(sizeBytes),
    content_url: storageKey ? elementContentUrl(collectionName, documentId, row.id) : null,
    caption,
    caption_status: captionStatus,
    caption_error: captionError,
  };
}
