import { deleteChunksByKey } from '../documents/chunk-store.js';
import { elementFilesPrefix } from '../documents/element-files.js';
import type { SqlRunner } from '../plugins.js';
import { removeFromIndexes, type SearchIndexes } from '../search/search-indexes.js';
import type { FileStore } from '../storage/file-store.js';

export interface WrittenPartsRuntime extends SearchIndexes {
  sql: SqlRunner;
  files: FileStore;
  /** Records that the collection's content changed (bumps its write version). */
  recordWrite(collectionId: string): Promise<void>;
}

/**
 * Takes back what ingestion wrote of documents that failed or wait for a retry: their elements with
 * the pictures kept for them (multimodal collections), and their chunks with the chunks' vectors
 * and keyword postings (the keyword index's BM25 statistics are decremented with them). A failed
 * document kept the chunks of an earlier attempt, of a run a crash cut short, or of the ready
 * version a reprocess set out to replace: searchable, listed and counted in the collection's stats,
 * under a document that said it held nothing. The write version of each collection whose chunks
 * went moves on, so that answers cached meanwhile, which may hold those chunks, are not served again.
 *
 * The chunks' collection is read from their rows, so that one call serves documents of several
 * collections (jobs taken over from a stopped process). Statements are run one after another, never
 * inside a transaction: the keyword index opens its own, and PGlite has a single connection.
 */
export async function takeBackWrittenParts(runtime: WrittenPartsRuntime, documentIds: string[]): Promise<void> {
  if (documentIds.length === 0) return;
  // The elements go in the statement that finds the chunks' keys: one statement less a batch.
  const rows = await runtime.sql<{ key: string | number; collection_id: string }>(
    `with elements as (delete from document_elements where document_id = any(?::uuid[]))
     select key, collection_id from chunks where document_id = any(?::uuid[])`,
    [documentIds, documentIds],
  );
  const keysByCollection = new Map<string, number[]>();
  for (const row of rows) {
    const keys = keysByCollection.get(row.collection_id) ?? [];
    keys.push(Number(row.key));
    keysByCollection.set(row.collection_id, keys);
  }
  for (const [collectionId, keys] of keysByCollection) {
    // The index entries first: a failure between the two leaves rows, which the next take-back finds.
    await removeFromIndexes(runtime, collectionId, keys);
    await deleteChunksByKey(runtime.sql, keys);
    await runtime.recordWrite(collectionId);
  }
  // Pictures are stored before chunking: a document that failed there (no text) left them, unlisted.
  const documents = await runtime.sql<{ id: string; collection_id: string }>('select id, collection_id from documents where id = any(?::uuid[])', [documentIds]);
  for (const document of documents) await runtime.files.remove(elementFilesPrefix(document.collection_id, document.id));
}
