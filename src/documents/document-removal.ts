import type { CollectionRecord } from '../db/entities/index.js';
import type { CollectionDirectory } from '../collections/collection-directory.js';
import type { SqlRunner } from '../plugins.js';
import { dropCollectionIndexes, prepareCollectionIndexes, removeFromIndexes, type SearchIndexes } from '../search/search-indexes.js';
import type { FileStore } from '../storage/file-store.js';
import { chunkKeysOfDocument } from './chunk-store.js';

export interface RemovalRuntime {
  sql: SqlRunner;
  files: FileStore;
  indexes: SearchIndexes;
  directory: CollectionDirectory;
}

/** Deletes a document with its chunks, elements, index entries and original file. */
export async function removeDocument(runtime: RemovalRuntime, collection: CollectionRecord, documentId: string, storageKey: string | null): Promise<void> {
  const keys = await chunkKeysOfDocument(runtime.sql, documentId);
  await removeFromIndexes(runtime.indexes, collection.id, keys);
  // Chunks and elements go with the row (foreign keys cascade).
  await runtime.sql('delete from documents where id = ?', [documentId]);
  await runtime.directory.recordWrite(runtime.sql, collection.id);
  if (storageKey) await runtime.files.remove(storageKey);
}

/** Removes every document and raw vector of a collection and keeps the collection. */
export async function truncateCollection(runtime: RemovalRuntime, collection: CollectionRecord): Promise<number> {
  await dropCollectionIndexes(runtime.indexes, collection);
  const deleted = await runtime.sql<{ id: string }>('delete from documents where collection_id = ? returning id', [collection.id]);
  await runtime.sql('delete from chunks where collection_id = ?', [collection.id]);
  await runtime.directory.recordWrite(runtime.sql, collection.id);
  await runtime.files.remove(collection.id);
  await prepareCollectionIndexes(runtime.indexes, collection);
  return deleted.length;
}
