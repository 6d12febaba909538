import type { CollectionRecord } from '../db/entities/index.js';
import type { CollectionDirectory } from '../collections/collection-directory.js';
import type { SqlRunner } from '../plugins.js';
import { dropCollectionIndexes, prepareCollectionIndexes, removeFromIndexes, type SearchIndexes } from '../search/search-indexes.js';
import type { FileStore } from '../storage/file-store.js';
import { elementFilesPrefix } from './element-files.js';
import { chunkKeysOfDocuments } from './chunk-store.js';

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
 */
export async function removeDocuments(runtime: RemovalRuntime, collection: CollectionRecord, documents: RemovableDocument[]): Promise<void> {
  if (documents.length === 0) return;
  const ids = documents.map((document) => document.id);
  await removeFromIndexes(runtime.indexes, collection.id, await chunkKeysOfDocuments(runtime.sql, ids));
  // Chunks and elements go with the rows (foreign keys cascade).
  await runtime.sql('delete from documents where id = any(?::uuid[]) and collection_id = ?', [ids, collection.id]);
  await runtime.directory.recordWrite(runtime.sql, collection.id);
  for (const document of documents) {
    if (document.storageKey) await runtime.files.remove(document.storageKey);
    // Pictures are stored before their element rows: a failed ingestion can leave some without rows.
    await runtime.files.remove(elementFilesPrefix(collection.id, document.id));
  }
}

/** Removes every document, raw vector, batch and upload session of a collection and keeps the collection. */
export async function truncateCollection(runtime: RemovalRuntime, collection: CollectionRecord): Promise<number> {
  await dropCollectionIndexes(runtime.indexes, collection);
  const deleted = await runtime.sql<{ id: string }>('delete from documents where collection_id = ? returning id', [collection.id]);
  await runtime.sql('delete from chunks where collection_id = ?', [collection.id]);
  // Open sessions' files are under the collection's prefix too, which goes below.
  await runtime.sql('delete from upload_sessions where collection_id = ?', [collection.id]);
  await runtime.sql('delete from document_batches where collection_id = ?', [collection.id]);
  await runtime.directory.recordWrite(runtime.sql, collection.id);
  await runtime.files.remove(collection.id);
  await prepareCollectionIndexes(runtime.indexes, collection);
  return deleted.length;
}

/** The parts of the services removal needs. */
export function removalRuntime(services: { sql: SqlRunner; files: FileStore; indexes: SearchIndexes; collections: CollectionDirectory }): RemovalRuntime {
  return { sql: services.sql, files: services.files, indexes: services.indexes, directory: services.collections };
}
