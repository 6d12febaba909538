import type { CollectionRecord } from '../db/entities/index.js';
import type { SqlRunner, VectorStore } from '../plugins.js';
import type { KeywordIndex } from './keyword/keyword-index.js';

/** The two indexes every collection has: vectors (semantic) and BM25 postings (keyword). */
export interface SearchIndexes {
  vectorStore: VectorStore;
  keywordIndex: KeywordIndex;
}

export async function prepareCollectionIndexes(indexes: SearchIndexes, collection: CollectionRecord): Promise<void> {
  await indexes.vectorStore.ensureCollection(collection.id, collection.dimension);
}

export async function dropCollectionIndexes(indexes: SearchIndexes, collection: CollectionRecord): Promise<void> {
  await indexes.keywordIndex.dropCollection(collection.id);
  await indexes.vectorStore.dropCollection(collection.id);
}

export async function removeFromIndexes(indexes: SearchIndexes, collectionId: string, keys: number[]): Promise<void> {
  if (keys.length === 0) return;
  await indexes.keywordIndex.remove(collectionId, keys);
  await indexes.vectorStore.delete(collectionId, keys);
}

/**
 * Called after index entries were added for freshly written chunk rows: removes the entries whose
 * rows are gone. A deletion (document, raw vector, collection) that ran between the row write and
 * the index write removed the rows and the index entries it found, but not these, which did not
 * exist yet; left in place they took places in every top-k and skewed BM25 statistics.
 */
export async function removeEntriesOfDeletedRows(sql: SqlRunner, indexes: SearchIndexes, collectionId: string, keys: number[]): Promise<void> {
  if (keys.length === 0) return;
  const rows = await sql<{ key: string | number }>('select key from chunks where key = any(?::bigint[])', [keys]);
  if (rows.length === keys.length) return;
  const present = new Set(rows.map((row) => Number(row.key)));
  await removeFromIndexes(indexes, collectionId, keys.filter((key) => !present.has(key)));
}
