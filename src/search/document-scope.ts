/**
 * A query scoped to some documents (`document_ids`): "answer from these files", the way an app
 * lets its user pick the documents a question is about.
 *
 * A document of another tenant counts as absent, so a query cannot learn that it exists. The
 * search indexes get the documents' chunk keys: ranking stays the collection's (BM25 statistics
 * are not narrowed), only the results are.
 */
import type { CollectionRecord } from '../db/entities/index.js';
import { NotFoundError } from '../errors.js';
import type { SqlRunner } from '../plugins.js';

/** Most documents one query may name: enough for a user's selection, small enough to rank exactly. */
export const MAX_SCOPED_DOCUMENTS = 100;

/**
 * A listed document that is not `ready`: the answer holds what of it is indexed (nothing while it
 * is pending, its earlier chunks while it is reprocessed, whatever a failure left), and says so,
 * since "answer from the file I just uploaded" is asked before the file is indexed.
 */
export interface DocumentNotReady {
  id: string;
  status: string;
  progress: unknown;
  error: string | null;
}

export interface DocumentScope {
  /** Keys of the chunks of the listed documents, the only ones the search indexes may return. */
  keys: number[];
  notReady: DocumentNotReady[];
}

/** The listed ids once each, lower-cased as the database writes uuids. */
export function listedDocumentIds(documentIds: readonly string[]): string[] {
  return [...new Set(documentIds.map((id) => id.toLowerCase()))];
}

/** A listed document with one of its chunks' keys (null for a document without chunks). */
export interface ListedDocumentRow {
  id: string;
  collection_id: string;
  tenant: string | null;
  status: string;
  progress: unknown;
  error: string | null;
  key: number | string | null;
}

/** The listed documents of every collection with their chunk keys, one read for any number of collections. */
export async function readListedDocuments(sql: SqlRunner, documentIds: readonly string[]): Promise<ListedDocumentRow[]> {
  // By id alone, the collection and tenant checked by the caller: given `collection_id = ?` too,
  // the embedded database (no statistics) read every document of the collection through its
  // (collection, status) index to find the listed ones.
  return sql<ListedDocumentRow>(
    `select document.id, document.collection_id, document.tenant, document.status,
            -- Repeated on every chunk's row: read only where it is reported.
            case when document.status <> 'ready' then document.progress end as progress, document.error, chunk.key
       from documents document left join chunks chunk on chunk.document_id = document.id
      where document.id = any(?::uuid[])`,
    [listedDocumentIds(documentIds)],
  );
}

/** Whether the collection holds the document for the query's tenant (any tenant where it has no tenant field). */
export function heldBy(row: Pick<ListedDocumentRow, 'collection_id' | 'tenant'>, collection: CollectionRecord, tenant: string | null): boolean {
  return row.collection_id === collection.id && (!collection.tenantField || row.tenant === tenant);
}

/**
 * The chunks and readiness of the listed documents; 404 naming the documents the collection does
 * not hold (for the tenant, when it has a tenant field). `rows` are `readListedDocuments`'s, read
 * here when the caller has not read them for several collections at once.
 */
export async function documentScope(sql: SqlRunner, collection: CollectionRecord, documentIds: readonly string[], tenant: string | null, rows?: readonly ListedDocumentRow[]): Promise<DocumentScope> {
  const listed = listedDocumentIds(documentIds);
  const held = (rows ?? await readListedDocuments(sql, listed)).filter((row) => heldBy(row, collection, tenant));
  const foundIds = new Set(held.map((row) => row.id));
  const missing = listed.filter((id) => !foundIds.has(id));
  if (missing.length > 0) throw documentsNotFound(missing, [collection]);
  const notReady = new Map<string, DocumentNotReady>();
  for (const row of held) {
    if (row.status !== 'ready' && !notReady.has(row.id)) notReady.set(row.id, { id: row.id, status: row.status, progress: row.progress, error: row.error });
  }
  return {
    keys: held.flatMap((row) => (row.key === null ? [] : [Number(row.key)])),
    notReady: listed.flatMap((id) => notReady.get(id) ?? []),
  };
}

/** 404 naming (the first five of) the listed documents that none of `collections` holds. */
export function documentsNotFound(missing: readonly string[], collections: readonly CollectionRecord[]): NotFoundError {
  const shown = missing.slice(0, 5).join(', ') + (missing.length > 5 ? ` and ${missing.length - 5} more` : '');
  const where = `${collections.length === 1 ? 'collection' : 'collections'} ${collections.map((collection) => collection.name).join(', ')}`;
  return new NotFoundError(`document_ids: ${missing.length === 1 ? 'document' : 'documents'} ${shown} not found in ${where}`);
}
