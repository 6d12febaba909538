import type { CollectionRecord } from '../db/entities/index.js';
import type { SqlRunner, VectorStore } from '../plugins.js';
import type { KeywordIndex } from './keyword/keyword-index.js';
import type { MetadataRangeIndexes } from './metadata-range-indexes.js';

/**
 * The two indexes every collection has: vectors (semantic) and BM25 postings (keyword); on
 * PostgreSQL, the range indexes over chunk metadata its range filters asked for.
 */
export interface SearchIndexes {
  vectorStore: VectorStore;
  keywordIndex: KeywordIndex;
  rangeIndexes?: MetadataRangeIndexes | undefined;
}

/**
 * Prepares the collection's indexes (loading those kept in memory), then looks whether the
 * collection still exists: when another request (another replica) deleted it meanwhile, its
 * deletion may have dropped the indexes before they were made again here, so they are dropped
 * again and the answer is false. Looking after making covers every order: a deletion that commits
 * after the look drops the indexes after they were made.
 */
export async function prepareIndexesOfLiveCollection(sql: SqlRunner, indexes: SearchIndexes, collection: Pick<CollectionRecord, 'id' | 'dimension'>): Promise<boolean> {
  await indexes.keywordIndex.load(collection.id);
  await indexes.vectorStore.ensureCollection(collection.id, collection.dimension);
  const [live] = await sql('select 1 from collections where id = ?', [collection.id]);
  if (live) return true;
  await dropCollectionIndexes(indexes, collection);
  return false;
}

export async function dropCollectionIndexes(indexes: SearchIndexes, collection: Pick<CollectionRecord, 'id'>): Promise<void> {
  await indexes.keywordIndex.dropCollection(collection.id);
  await indexes.vectorStore.dropCollection(collection.id);
  await indexes.rangeIndexes?.dropCollection(collection.id);
}

/**
 * Removes the entries of a truncated collection's deleted rows (`keys`), and keeps those of rows
 * written since: an upload or raw vector racing the truncate writes its rows after the deletion and
 * its entries before or after this. Dropping by collection here lost such entries for good (on
 * PostgreSQL with two replicas, 16 clients racing truncates with writes left 56 chunks with 52
 * vectors). Vectors go by key (an embedded graph left empty is dropped whole); the SQL keyword index
 * keeps the postings of rows present and counts its statistics again, since removing the packed
 * postings by key would record a removal for nearly each one. Range indexes go: no filter asked for
 * them on the rows to come.
 */
export async function removeTruncatedRowsFromIndexes(indexes: SearchIndexes, collectionId: string, keys: number[]): Promise<void> {
  await indexes.keywordIndex.clearDeletedRows(collectionId);
  await indexes.vectorStore.delete(collectionId, keys);
  await indexes.rangeIndexes?.dropCollection(collectionId);
}

export async function removeFromIndexes(indexes: SearchIndexes, collectionId: string, keys: number[]): Promise<void> {
  if (keys.length === 0) return;
  await indexes.keywordIndex.remove(collectionId, keys);
  await indexes.vectorStore.delete(collectionId, keys);
}

/**
 * Called after index entries were added for freshly written chunk rows: removes the entries whose
 * rows are gone. A deletion of documents or of a collection deletes rows before it removes their
 * entries (document-removal.ts, collections.service.ts): entries written before the rows went are
 * its to remove, these, written after, are found here; left in place they took places in every top-k and skewed BM25
 * statistics. The SQL keyword index and pgvector do not write entries of deleted rows in the first
 * place; the in-process indexes (memory keyword index, embedded vectors) do, until this runs.
 *
 * Until then a query could meet those entries and drop them at the fetch, answering short, and the
 * query cache kept that answer for as long as the rest of the ingestion took (a 4,096-chunk slice
 * takes ~14 s on PostgreSQL): so the collection's write version moves on when entries were removed,
 * through the caller's `recordWrite` (CollectionDirectory.recordWrite, which also drops this
 * process's cached record at once).
 */
export async function removeEntriesOfDeletedRows(
  sql: SqlRunner, indexes: SearchIndexes, collectionId: string, keys: number[], recordWrite: (collectionId: string) => Promise<void>,
): Promise<void> {
  if (keys.length === 0) return;
  const rows = await sql<{ key: string | number }>('select key from chunks where key = any(?::bigint[])', [keys]);
  if (rows.length === keys.length) return;
  const present = new Set(rows.map((row) => Number(row.key)));
  await removeFromIndexes(indexes, collectionId, keys.filter((key) => !present.has(key)));
  await recordWrite(collectionId);
}
