import type { CollectionRecord } from '../db/entities/index.js';
import type { VectorStore } from '../plugins.js';
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
