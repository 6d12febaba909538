import { createHash, randomUUID } from 'node:crypto';
import { PassThrough, Transform, type Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Document, DOCUMENT_STATUSES, type CollectionRecord, type DocumentRecord, type DocumentStatus } from '../db/entities/index.js';
import { NotFoundError, PayloadTooLargeError } from '../errors.js';
import type { JobQueue } from '../ingestion/job-queue.js';
import type { SqlRunner } from '../plugins.js';
import type { FileStore } from '../storage/file-store.js';
import { checkMetadata } from './metadata-rules.js';

export interface StoredUpload {
  storageKey: string;
  sizeBytes: number;
  sha256: string;
}

/**
 * Streams an upload into the file store, hashing and counting on the way, so a file is never
 * held whole in memory. `isTruncated` reports the multipart size limit being hit.
 */
export async function storeUpload(files: FileStore, collectionId: string, source: Readable, isTruncated: () => boolean, limitBytes: number): Promise<StoredUpload> {
  const storageKey = `${collectionId}/${randomUUID()}`;
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      sizeBytes += chunk.length;
      callback(null, chunk);
    },
  });
  await files.write(storageKey, source.pipe(meter).pipe(new PassThrough()));
  if (isTruncated()) {
    await files.remove(storageKey);
    throw new PayloadTooLargeError(`File exceeds the upload limit of ${limitBytes} bytes`);
  }
  return { storageKey, sizeBytes, sha256: hash.digest('hex') };
}

export interface NewDocumentInput {
  filename: string;
  contentType: string;
  upload: StoredUpload;
  metadata: Record<string, unknown>;
  batchId?: string | null;
}

/** Creates the document and its ingestion job in one transaction: both exist, or neither. */
export async function createDocument(em: EntityManager, queue: JobQueue, collection: CollectionRecord, input: NewDocumentInput): Promise<DocumentRecord> {
  const tenant = checkMetadata(collection, input.metadata);
  const now = new Date();
  const document = await em.transactional(async (tx) => {
    const created = tx.create(Document, {
      id: randomUUID(),
      collectionId: collection.id,
      batchId: input.batchId ?? null,
      // Only the base name is kept: a client path such as ../../etc/passwd is a label, never a location.
      filename: input.filename.split(/[\\/]/).pop()!.slice(0, 1024) || 'upload',
      contentType: input.contentType,
      sizeBytes: input.upload.sizeBytes,
      sha256: input.upload.sha256,
      storageKey: input.upload.storageKey,
      metadata: input.metadata,
      tenant,
      title: null,
      status: 'pending',
      progress: { stage: 'queued', percent: 0, message: 'waiting for a worker' },
      error: null,
      chunkCount: 0,
      createdAt: now,
      updatedAt: now,
      processedAt: null,
    });
    await tx.flush();
    await queue.enqueue(tx, 'ingest_document', { collectionId: collection.id, documentId: created.id });
    return created;
  });
  queue.notify();
  return document;
}

export const DOCUMENT_SORT_FIELDS = ['created_at', 'updated_at', 'filename', 'size_bytes', 'status'] as const;
export type DocumentSortField = (typeof DOCUMENT_SORT_FIELDS)[number];

export interface DocumentListQuery {
  q?: string | undefined;
  status?: DocumentStatus | undefined;
  sort: DocumentSortField;
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

const SORT_PROPERTY: Record<DocumentSortField, string> = {
  created_at: 'createdAt', updated_at: 'updatedAt', filename: 'filename', size_bytes: 'sizeBytes', status: 'status',
};

export async function listDocuments(em: EntityManager, collection: CollectionRecord, query: DocumentListQuery) {
  const where: Record<string, unknown> = { collectionId: collection.id };
  if (query.status) where.status = query.status;
  if (query.q) {
    const pattern = `%${query.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.$or = [{ filename: { $ilike: pattern } }, { title: { $ilike: pattern } }];
  }
  const [data, total] = await em.findAndCount(Document, where, {
    orderBy: { [SORT_PROPERTY[query.sort]]: query.order, id: query.order },
    limit: query.limit, offset: query.offset,
  });
  return { data, total };
}

export async function getDocument(em: EntityManager, collection: CollectionRecord, id: string): Promise<DocumentRecord> {
  const document = await em.findOne(Document, { id, collectionId: collection.id });
  if (!document) throw new NotFoundError(`Document ${id} not found in collection ${collection.name}`);
  return document;
}

export async function documentCountsByStatus(sql: SqlRunner, collectionId: string): Promise<Record<DocumentStatus, number>> {
  const rows = await sql<{ status: DocumentStatus; count: string | number }>(
    'select status, count(*) as count from documents where collection_id = ? group by status', [collectionId],
  );
  const counts = Object.fromEntries(DOCUMENT_STATUSES.map((status) => [status, 0])) as Record<DocumentStatus, number>;
  for (const row of rows) counts[row.status] = Number(row.count);
  return counts;
}

export function serializeDocument(document: DocumentRecord, collectionName: string) {
  return {
    id: document.id,
    collection: collectionName,
    batch_id: document.batchId ?? null,
    filename: document.filename,
    content_type: document.contentType,
    size_bytes: document.sizeBytes,
    sha256: document.sha256,
    metadata: document.metadata,
    title: document.title ?? null,
    status: document.status,
    progress: document.progress ?? null,
    error: document.error ?? null,
    chunk_count: document.chunkCount,
    created_at: document.createdAt.toISOString(),
    updated_at: document.updatedAt.toISOString(),
    processed_at: document.processedAt?.toISOString() ?? null,
  };
}
