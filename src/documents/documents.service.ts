import { createHash, randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { raw, type EntityManager } from '@mikro-orm/postgresql';
import { writeIntoCollection } from '../collections/write-into-collection.js';
import { assertCollectionAccess, type Actor } from '../auth/actor.js';
import { Collection, Document, DOCUMENT_STATUSES, type CollectionRecord, type DocumentRecord, type DocumentStatus } from '../db/entities/index.js';
import { NotFoundError, PayloadTooLargeError } from '../errors.js';
import type { JobQueue } from '../ingestion/job-queue.js';
import type { SqlRunner } from '../plugins.js';
import { filterToSql } from '../search/filters/filter-to-sql.js';
import type { MetadataFilter } from '../search/filters/filter-types.js';
import { splitTenantEquality } from '../search/filters/tenant-equality.js';
import type { FileStore } from '../storage/file-store.js';

/** An upload's bytes are in the file store (`storageKey`) or, when small, held in memory for the database (`content`). */
export interface StoredUpload {
  storageKey: string | null;
  content: Buffer | null;
  sizeBytes: number;
  sha256: string;
}

export interface StoreUploadOptions {
  /** Whether the multipart size limit was hit. */
  isTruncated: () => boolean;
  limitBytes: number;
  /**
   * An upload that arrived whole and is at most this size stays in memory, to be written with its
   * document row (document_originals, migration 0007); 0 stores every upload in the file store.
   */
  inlineMaxBytes: number;
}

/** `source` passed on as it arrives, each chunk counted on the way. */
function metered(source: Readable, count: (chunk: Buffer) => void): Readable {
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      count(chunk);
      callback(null, chunk);
    },
  });
  // pipe() does not forward errors: a client that goes away mid-file must fail the write, not stall
  // it. finished() also reports an error the source had before this point.
  finished(source).catch((error: unknown) => meter.destroy(error as Error));
  return source.pipe(meter);
}

function tooLarge(limitBytes: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`File exceeds the upload limit of ${limitBytes} bytes`);
}

/**
 * Stores an upload, hashing and counting its bytes: a stream on the way into the file store, so a
 * file is never held whole in memory; a small upload that arrived whole as one Buffer is kept as
 * it is for the database (see `inlineMaxBytes`), else written as a file.
 */
export async function storeUpload(files: FileStore, collectionId: string, source: Readable | Buffer, options: StoreUploadOptions): Promise<StoredUpload> {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const count = (bytes: Buffer) => {
    hash.update(bytes);
    sizeBytes += bytes.length;
  };
  if (Buffer.isBuffer(source)) {
    count(source);
    if (options.isTruncated()) throw tooLarge(options.limitBytes);
    if (source.length <= options.inlineMaxBytes) return { storageKey: null, content: source, sizeBytes, sha256: hash.digest('hex') };
  }
  const storageKey = `${collectionId}/${randomUUID()}`;
  try {
    await files.write(storageKey, Buffer.isBuffer(source) ? source : metered(source, count));
  } catch (error) {
    // A client that hangs up mid-file leaves a partial file: nothing half-written stays behind.
    await files.remove(storageKey).catch(() => undefined);
    throw error;
  }
  if (options.isTruncated()) {
    await files.remove(storageKey);
    throw tooLarge(options.limitBytes);
  }
  return { storageKey, content: null, sizeBytes, sha256: hash.digest('hex') };
}

/** Removes what storeUpload wrote for an upload that will not become a document (nothing for one held in memory). */
export async function discardUpload(files: FileStore, upload: StoredUpload): Promise<void> {
  if (upload.storageKey) await files.remove(upload.storageKey);
}

export interface NewDocumentInput {
  filename: string;
  contentType: string;
  upload: StoredUpload;
}

export interface DocumentRow {
  id: string; collection_id: string; batch_id: string | null; filename: string; content_type: string; size_bytes: string | number;
  sha256: string; storage_key: string | null; metadata: Record<string, unknown>; tenant: string | null; title: string | null;
  source_metadata: Record<string, unknown>;
  status: DocumentStatus; progress: DocumentRecord['progress']; error: string | null; chunk_count: number;
  created_at: string | Date; updated_at: string | Date; processed_at: string | Date | null;
}

export function documentFromRow(row: DocumentRow): DocumentRecord {
  return {
    id: row.id, collectionId: row.collection_id, batchId: row.batch_id, filename: row.filename, contentType: row.content_type,
    sizeBytes: Number(row.size_bytes), sha256: row.sha256, storageKey: row.storage_key, metadata: row.metadata, tenant: row.tenant,
    title: row.title, sourceMetadata: row.source_metadata, status: row.status, progress: row.progress, error: row.error, chunkCount: row.chunk_count,
    createdAt: new Date(row.created_at), updatedAt: new Date(row.updated_at), processedAt: row.processed_at ? new Date(row.processed_at) : null,
  } as DocumentRecord;
}

/**
 * Creates the documents, their small originals and their ingestion jobs in one statement (a
 * data-modifying CTE is atomic): all exist, or none. One statement rather than a transaction
 * matters on PGlite, where each costs ~1 ms and the upload path is what bounds end-to-end
 * ingestion. Returned in input order; `created_at` steps by a microsecond per file so a batch
 * lists in the order it was sent.
 */
export async function createDocuments(
  sql: SqlRunner, queue: JobQueue, collection: CollectionRecord, inputs: NewDocumentInput[],
  shared: { metadata: Record<string, unknown>; tenant: string | null; batchId: string | null },
): Promise<DocumentRecord[]> {
  if (inputs.length === 0) return [];
  const rows = inputs.map((input, index) => ({
    id: randomUUID(), ord: index, filename: input.filename, content_type: input.contentType, size_bytes: input.upload.sizeBytes,
    sha256: input.upload.sha256, storage_key: input.upload.storageKey, original: input.upload.content?.toString('base64') ?? null,
  }));
  const created = await writeIntoCollection(collection, () => sql<DocumentRow>(
    `with input as (
       select * from jsonb_to_recordset(?::jsonb)
         as r(id uuid, ord int, filename text, content_type text, size_bytes bigint, sha256 text, storage_key text, original text)
     ), document as (
       insert into documents (id, collection_id, batch_id, filename, content_type, size_bytes, sha256, storage_key, metadata, tenant,
         title, status, progress, error, chunk_count, created_at, updated_at)
       select r.id, ?, ?, r.filename, r.content_type, r.size_bytes, r.sha256, r.storage_key, ?::jsonb, ?, null, 'pending',
         '{"stage": "queued", "percent": 0, "message": "waiting for a worker"}'::jsonb, null, 0,
         now() + r.ord * interval '1 microsecond', now() + r.ord * interval '1 microsecond'
       from input r
       returning *
     ), original as (
       insert into document_originals (document_id, content) select d.id, decode(r.original, 'base64') from document d join input r on r.id = d.id
       where r.original is not null
     ), job as (
       insert into jobs (id, kind, collection_id, document_id, payload, status, attempts, max_attempts, run_after, created_at, updated_at)
       select gen_random_uuid(), 'ingest_document', collection_id, id, '{}'::jsonb, 'queued', 0, 3, now(), now(), now() from document
     )
     select * from document`,
    [JSON.stringify(rows), collection.id, shared.batchId, JSON.stringify(shared.metadata), shared.tenant],
  ));
  queue.notify();
  const byId = new Map(created.map((row) => [row.id, documentFromRow(row)]));
  return rows.map((row) => byId.get(row.id)!);
}

export const DOCUMENT_SORT_FIELDS = ['created_at', 'updated_at', 'filename', 'size_bytes', 'status'] as const;
export type DocumentSortField = (typeof DOCUMENT_SORT_FIELDS)[number];

export interface DocumentListQuery {
  q?: string | undefined;
  status?: DocumentStatus | undefined;
  /** On the upload metadata, in the filter language of queries. */
  filter?: MetadataFilter | undefined;
  sort: DocumentSortField;
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

const SORT_PROPERTY: Record<DocumentSortField, string> = {
  created_at: 'createdAt', updated_at: 'updatedAt', filename: 'filename', size_bytes: 'sizeBytes', status: 'status',
};

/** `{"a","b\"c"}`: the input form of a text[] value. */
function postgresArrayText(items: unknown[]): string {
  return `{${items.map((item) => `"${String(item).replace(/["\\]/g, '\\$&')}"`).join(',')}}`;
}

/**
 * How the document list's `q` and the names it searches are folded: compatibility forms to plain
 * ones (NFKD: full-width letters, ligatures), combining accents dropped, lowercase; so "resume"
 * finds "Résumé.pdf" and "finance" "ﬁnance.pdf". `foldedNameSql` folds a column the same way.
 * Not foldForSearch (src/text/search-folding.ts), the keyword index's fold: its letter table
 * (ß → ss) and script rules have no SQL twin, and both sides must fold alike.
 */
function foldForNameSearch(text: string): string {
  return text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase();
}

const foldedNameSql = (column: string) => `lower(regexp_replace(normalize(${column}, NFKD), '[\\u0300-\\u036f]', '', 'g'))`;

export async function listDocuments(em: EntityManager, collection: CollectionRecord, query: DocumentListQuery) {
  const where: Record<string, unknown> = { collectionId: collection.id };
  if (query.status) where.status = query.status;
  // One table is read, so columns need no alias.
  const conditions: Array<Record<string, boolean>> = [];
  if (query.q) {
    const pattern = `%${foldForNameSearch(query.q).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    conditions.push({ [raw(`(${foldedNameSql('filename')} like ? or ${foldedNameSql('title')} like ?)`, [pattern, pattern])]: true });
  }
  // A collection's tenant is matched as text, as queries match it (the number 5 and the string "5" are one).
  const { tenant, rest: filter } = splitTenantEquality(query.filter, collection.tenantField);
  if (tenant !== null) where.tenant = tenant;
  if (filter) {
    // MikroORM writes a raw fragment's values into the SQL, an array as a comma list, so each path
    // goes as the text of a PostgreSQL array.
    const condition = filterToSql(filter, 'metadata');
    conditions.push({ [raw(`(${condition.sql})`, condition.params.map((param) => (Array.isArray(param) ? postgresArrayText(param) : param)))]: true });
  }
  if (conditions.length > 0) where.$and = conditions;
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

/** A document by id alone (`GET /v1/documents/{id}`): its collection is found first, then a key's pin is enforced (spec 4.3). */
export async function findDocumentInAnyCollection(em: EntityManager, actor: Actor, id: string): Promise<{ document: DocumentRecord; collection: CollectionRecord }> {
  const document = await em.findOne(Document, { id });
  const collection = document ? await em.findOne(Collection, { id: document.collectionId }) : null;
  if (!document || !collection) throw new NotFoundError(`Document ${id} not found`);
  assertCollectionAccess(actor, collection.name, collection);
  return { document, collection };
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
    source_metadata: document.sourceMetadata,
    status: document.status,
    progress: document.progress ?? null,
    error: document.error ?? null,
    chunk_count: document.chunkCount,
    created_at: document.createdAt.toISOString(),
    updated_at: document.updatedAt.toISOString(),
    processed_at: document.processedAt?.toISOString() ?? null,
  };
}
