import type { CollectionRecord } from '../db/entities/index.js';
import type { CollectionDirectory } from '../collections/collection-directory.js';
import { NotFoundError } from '../errors.js';
import type { SqlRunner } from '../plugins.js';
import { settleIndexRemoval } from '../search/pending-index-removals.js';
import { prepareIndexesOfLiveCollection, removeFromIndexes, removeTruncatedRowsFromIndexes, type SearchIndexes } from '../search/search-indexes.js';
import type { FileStore } from '../storage/file-store.js';
import { elementFilesPrefix } from './element-files.js';
import { deleteCollectionRows, deleteDocumentRows } from './chunk-store.js';

export interface RemovalRuntime {
  sql: SqlRunner;
  files: FileStore;
  indexes: SearchIndexes;
  directory: CollectionDirectory;
}

export interface RemovableDocument {
  id: string;
  storageKey: string | null;
}

/** Deletes a document with its chunks, elements, index entries, original file and element images. */
export async function removeDocument(runtime: RemovalRuntime, collection: CollectionRecord, documentId: string, storageKey: string | null): Promise<void> {
  await removeDocuments(runtime, collection, [{ id: documentId, storageKey }]);
}

/**
 * Deletes several documents of one collection with a fixed number of statements (a batch of 1,000
 * costs what one does on PGlite's ~1 ms a statement), then their stored files.
 *
 * Rows first, index entries after, by the keys the deletion returned. An ingestion writing these
 * documents adds its index entries after its chunk rows, then looks the rows up and removes the
 * entries of those gone (removeEntriesOfDeletedRows): each entry is then removed by one side or
 * the other. The other way round (entries, then rows), that look-up could fall in between, find
 * the rows still there and keep entries the deletion had already passed: on PostgreSQL with two
 * replicas, 120 deletes during indexing left 28 vectors for good, and BM25 counted 21 chunks for 18.
 * The removal is recorded with the rows' deletion and settled after it: when it fails, the request
 * answers 500 and PendingIndexRemovalSweep completes it (a retried DELETE finds no document).
 */
export async function removeDocuments(runtime: RemovalRuntime, collection: CollectionRecord, documents: RemovableDocument[]): Promise<void> {
  if (documents.length === 0) return;
  const { keys, owedRemovalId } = await deleteDocumentRows(runtime.sql, collection.id, documents.map((document) => document.id));
  await removeFromIndexes(runtime.indexes, collection.id, keys);
  await runtime.directory.recordWrite(runtime.sql, collection.id);
  await settleIndexRemoval(runtime.sql, owedRemovalId);
  await removeDocumentFiles(runtime.files, collection, documents);
}

/**
 * Documents' stored files: their originals (unless kept in the database) and their element
 * pictures' prefixes, removed whether or not rows name them: pictures are stored before their
 * element rows, so a failed ingestion can leave some without rows.
 */
async function removeDocumentFiles(files: FileStore, collection: CollectionRecord, documents: RemovableDocument[], otherKeys: string[] = []): Promise<void> {
  const originals = documents.flatMap((document) => document.storageKey ? [document.storageKey] : []);
  await files.removeMany([...originals, ...otherKeys], documents.map((document) => elementFilesPrefix(collection.id, document.id)));
}

/**
 * Removes every document, raw vector, batch and upload session of a collection and keeps the
 * collection. Rows before index entries, as removeDocuments does and for the same reason; the
 * entries are those of the rows deleted (removeTruncatedRowsFromIndexes), so a chunk written in the
 * moment between the two (an upload or raw vector racing the truncate) keeps its own. The removal
 * is recorded with the rows' deletion and settled after it: when it fails, the request answers 500
 * and PendingIndexRemovalSweep removes the entries by key. A
 * collection deleted meanwhile (by another replica) is a 404, and the indexes made again for it
 * are removed: they were left behind, and every vector insert paid for an index of nothing.
 */
export async function truncateCollection(runtime: RemovalRuntime, collection: CollectionRecord): Promise<number> {
  const deleted = await deleteCollectionRows(runtime.sql, collection.id);
  // The deleted open sessions' files, read in the statement that deletes them (their rows go by
  // cascade). A session being completed hands its files to documents: those a completion creates
  // after the documents' deletion outlive the truncate (a removal took their files in the race probe).
  const sessionFiles = await runtime.sql<{ storage_key: string }>(
    `with sessions_gone as (delete from upload_sessions where collection_id = ? returning id, status)
     select storage_key from upload_session_files where session_id in (select id from sessions_gone where status = 'open')`, [collection.id],
  );
  await runtime.sql('delete from document_batches where collection_id = ?', [collection.id]);
  await removeTruncatedRowsFromIndexes(runtime.indexes, collection.id, deleted.chunkKeys);
  await runtime.directory.recordWrite(runtime.sql, collection.id);
  await settleIndexRemoval(runtime.sql, deleted.owedRemovalId);
  // The files of the rows deleted, not the collection's whole prefix: an upload racing the truncate
  // stores its file before its document exists, and that document outlives the truncate. Removing
  // the prefix took such files from their documents (which then failed: "the original file is
  // missing") and failed the truncate when a file arrived while the directory was being removed.
  await removeDocumentFiles(runtime.files, collection, deleted.documents, sessionFiles.map((file) => file.storage_key));
  if (!await prepareIndexesOfLiveCollection(runtime.sql, runtime.indexes, collection)) {
    throw new NotFoundError(`Collection ${collection.name} not found: it was deleted while this request was handled`);
  }
  return deleted.documents.length;
}

/** The parts of the services removal needs. */
export function removalRuntime(services: { sql: SqlRunner; files: FileStore; indexes: SearchIndexes; collections: CollectionDirectory }): RemovalRuntime {
  return { sql: services.sql, files: services.files, indexes: services.indexes, directory: services.collections };
}
