import { v3 as nameBasedUuid } from 'uuid';
import { retryingDeadlocks } from '../db/sql-runner.js';
import type { SqlRunner } from '../plugins.js';
import { DELETED_CHUNK_FIGURES, lowerChunkTotals } from './chunk-totals.js';

/**
 * A document chunk's id: the name-based UUID (version 3) of its index, its document's id being the
 * namespace. A UUID, as api-contract 1 asks of the ids the service makes (it was
 * "<document id>:<index>" until migration 0011, which computes this in SQL for chunks stored so);
 * deterministic, so a reprocessed document's chunks replace those of the same index in place.
 */
export function documentChunkId(documentId: string, chunkIndex: number): string {
  return nameBasedUuid(String(chunkIndex), documentId);
}

export interface NewChunk {
  id: string;
  documentId: string | null;
  chunkIndex: number;
  text: string;
  metadata: Record<string, unknown>;
  tenant: string | null;
  /** Where the chunk starts in its document's text; absent for raw vectors. */
  textStart?: number | undefined;
}

export interface StoredChunk {
  key: number;
  id: string;
  collection_id: string;
  document_id: string | null;
  chunk_index: number;
  text: string;
  metadata: Record<string, unknown>;
  tenant: string | null;
}

export interface InsertChunksOptions {
  /**
   * Replace an existing id only when it is a raw vector of the same tenant (the same `tenant` text),
   * else leave it and return a null key. Raw-vector upserts check this before writing; the clause
   * closes the gap between that read and this write, where another tenant's request could take the id.
   */
  replaceOnlyOwnRawVectors?: boolean;
}

/** Rows per INSERT: large enough to amortise a statement, small enough for PGlite's one connection. */
const INSERT_BATCH = 500;

/**
 * Chunk rows through batched SQL (MikroORM's unit of work doubles bulk insert time, STACK.md).
 * Inserting an id that exists in the collection replaces its row and keeps its key, so the
 * search indexes replace the entry by key too. Each statement checks and locks the collection and
 * the documents once, where foreign keys checked every row (migration 0008): a row whose owner was
 * deleted meanwhile is not written, and its key is null. The documents in id order, the order in
 * which deletions and truncates lock them, so that none of them waits on the other in a cycle.
 */
export async function insertChunks(sql: SqlRunner, collectionId: string, chunks: NewChunk[], options: InsertChunksOptions = {}): Promise<Array<number | null>> {
  const replaceCondition = options.replaceOnlyOwnRawVectors ? 'where chunks.document_id is null and chunks.tenant is not distinct from excluded.tenant' : '';
  const keys: Array<number | null> = [];
  for (let start = 0; start < chunks.length; start += INSERT_BATCH) {
    const batch = chunks.slice(start, start + INSERT_BATCH);
    const documentIds = [...new Set(batch.flatMap((chunk) => (chunk.documentId ? [chunk.documentId] : [])))];
    const rows = await sql<{ id: string; key: string | number }>(
      `with owner as (select id from collections where id = ?::uuid for key share),
         live_documents as (select id from documents where id = any(?::uuid[]) order by id for key share)
       insert into chunks (id, collection_id, document_id, chunk_index, text, metadata, tenant, text_start, created_at)
       select r.id, owner.id, r.document_id, r.chunk_index, r.text, r.metadata, r.tenant, r.text_start, now()
       from jsonb_to_recordset(?::jsonb) as r(id text, document_id uuid, chunk_index int, text text, metadata jsonb, tenant text, text_start int)
       cross join owner
       where r.document_id is null or r.document_id in (select id from live_documents)
       on conflict (collection_id, id) do update set document_id = excluded.document_id, chunk_index = excluded.chunk_index,
         text = excluded.text, metadata = excluded.metadata, tenant = excluded.tenant, text_start = excluded.text_start, created_at = excluded.created_at
       ${replaceCondition}
       returning id, key`,
      [collectionId, documentIds, JSON.stringify(batch.map((chunk) => ({
        id: chunk.id, document_id: chunk.documentId, chunk_index: chunk.chunkIndex, text: chunk.text, metadata: chunk.metadata, tenant: chunk.tenant,
        text_start: chunk.textStart ?? null,
      })))],
    );
    const keyById = new Map(rows.map((row) => [row.id, Number(row.key)]));
    for (const chunk of batch) keys.push(keyById.get(chunk.id) ?? null);
  }
  return keys;
}

export interface DeletedDocumentRows {
  keys: number[];
  /** The pending_index_removals record of `keys` (settleIndexRemoval), null when no chunk went. */
  owedRemovalId: number | null;
}

/**
 * Deletes documents of a collection with their chunks (and, through the trigger of migration 0008,
 * their elements) and returns the deleted chunks' keys, whose index entries the caller removes.
 * The same statement records that removal as owed (migration 0014), so entries left by a removal
 * that fails are still removed later: the caller settles the record once its removal succeeded.
 * The documents are locked first: a chunk write holds KEY SHARE on its document for its statement
 * (insertChunks), so this waits for one in flight and blocks the next until the documents are
 * gone, and the chunk deletion, a statement of its own with a snapshot taken after the lock, sees
 * every chunk written. One statement could not do it: its snapshot predates the wait, and chunks
 * committed meanwhile would go with the trigger without their keys being returned.
 */
export async function deleteDocumentRows(sql: SqlRunner, collectionId: string, documentIds: string[]): Promise<DeletedDocumentRows> {
  return sql.transaction(async (run) => {
    // In id order, so that two deletions of overlapping documents lock them in the same order.
    const locked = await run<{ id: string }>(
      'select id from documents where id = any(?::uuid[]) and collection_id = ? order by id for update', [documentIds, collectionId],
    );
    if (locked.length === 0) return { keys: [], owedRemovalId: null };
    const ids = locked.map((row) => row.id);
    // A CTE rather than a statement of its own: a statement costs ~1 ms on PGlite.
    const rows = await run<{ key: string | number; owed_removal_id: string | number }>(
      `with documents_gone as (delete from documents where id = any(?::uuid[])),
         chunks_gone as (delete from chunks where document_id = any(?::uuid[]) returning key, ${DELETED_CHUNK_FIGURES}),
         totals_lowered as (${lowerChunkTotals('chunks_gone')}),
         owed as (
           insert into pending_index_removals (collection_id, chunk_keys)
           select ?::uuid, array_agg(key) from chunks_gone having count(*) > 0
           returning id)
       select key, (select id from owed) as owed_removal_id from chunks_gone`,
      [ids, ids, collectionId],
    );
    // bigint comes back as a string from PostgreSQL, as a number from PGlite.
    return { keys: rows.map((row) => Number(row.key)), owedRemovalId: rows.length > 0 ? Number(rows[0].owed_removal_id) : null };
  });
}

export interface DeletedCollectionRows {
  /** The documents deleted, with the key of each one's stored original (null: kept in the database). */
  documents: Array<{ id: string; storageKey: string | null }>;
  /** The deleted chunks' keys. */
  chunkKeys: number[];
  /** The pending_index_removals record of the deleted chunks' keys, null when no chunk went. */
  owedRemovalId: number | null;
}

/**
 * Deletes every document and chunk of a collection (raw vectors too; elements go through the
 * trigger of migration 0008) and records the chunks' index removal as owed, as deleteDocumentRows
 * does and for the same reason locks the documents first: a chunk an ingestion committed while one
 * statement waited went with the cascade and without its key, and its vector stayed for good (a
 * probe racing truncates with uploads on two replicas left 46 vectors of 23 deleted documents).
 * Documents created after the lock outlive the truncate, with their chunks; raw vectors go as the
 * deletion's snapshot sees them. Statements that lock several documents lock them in id order, as
 * this does (before ingestion's did, 7 % of truncates in that probe deadlocked); one that deadlocks
 * all the same is run again whole.
 */
export async function deleteCollectionRows(sql: SqlRunner, collectionId: string): Promise<DeletedCollectionRows> {
  return retryingDeadlocks(() => sql.transaction(async (run) => {
    const locked = await run<{ id: string }>('select id from documents where collection_id = ? order by id for update', [collectionId]);
    const ids = locked.map((document) => document.id);
    const [row] = await run<{
      documents: Array<{ id: string; storage_key: string | null }> | string;
      chunk_keys: Array<string | number> | null;
      owed_removal_id: string | number | null;
    }>(
      `with documents_gone as (delete from documents where id = any(?::uuid[]) returning id, storage_key),
         chunks_gone as (delete from chunks where collection_id = ? and (document_id is null or document_id = any(?::uuid[])) returning key, ${DELETED_CHUNK_FIGURES}),
         totals_lowered as (${lowerChunkTotals('chunks_gone')}),
         owed as (
           insert into pending_index_removals (collection_id, chunk_keys)
           select ?::uuid, array_agg(key) from chunks_gone having count(*) > 0
           returning id, chunk_keys)
       select (select coalesce(json_agg(json_build_object('id', id, 'storage_key', storage_key)), '[]') from documents_gone) as documents,
         (select chunk_keys from owed) as chunk_keys,
         (select id from owed) as owed_removal_id`,
      [ids, collectionId, ids, collectionId],
    );
    // json comes back parsed from PostgreSQL's driver, as text from PGlite's.
    const documents = typeof row!.documents === 'string' ? JSON.parse(row!.documents) as Array<{ id: string; storage_key: string | null }> : row!.documents;
    return {
      documents: documents.map((document) => ({ id: document.id, storageKey: document.storage_key })),
      chunkKeys: (row!.chunk_keys ?? []).map(Number),
      owedRemovalId: row!.owed_removal_id === null ? null : Number(row!.owed_removal_id),
    };
  }));
}

export async function deleteChunksByKey(sql: SqlRunner, keys: number[]): Promise<void> {
  if (keys.length === 0) return;
  await sql(`with gone as (delete from chunks where key = any(?::bigint[]) returning ${DELETED_CHUNK_FIGURES}) ${lowerChunkTotals('gone')}`, [keys]);
}

/** A page of a document's chunks in order, and how many it has. */
export async function listDocumentChunks(sql: SqlRunner, documentId: string, page: { limit: number; offset: number }) {
  const rows = await sql<{ id: string; chunk_index: number; text: string; metadata: Record<string, unknown> }>(
    'select id, chunk_index, text, metadata from chunks where document_id = ? order by chunk_index limit ? offset ?',
    [documentId, page.limit, page.offset],
  );
  const [count] = await sql<{ total: string | number }>('select count(*) as total from chunks where document_id = ?', [documentId]);
  return { rows, total: Number(count?.total ?? 0) };
}

/** A chunk found by a query, with what a citation of it needs: its document's file name and title (null for a raw vector). */
export interface FoundChunk extends StoredChunk {
  document_filename: string | null;
  document_title: string | null;
}

export async function fetchChunksByKey(sql: SqlRunner, keys: number[]): Promise<Map<number, FoundChunk>> {
  if (keys.length === 0) return new Map();
  const rows = await sql<FoundChunk & { key: string | number }>(
    `select c.key, c.id, c.collection_id, c.document_id, c.chunk_index, c.text, c.metadata, c.tenant,
            d.filename as document_filename, d.title as document_title
       from chunks c left join documents d on d.id = c.document_id
      where c.key = any(?::bigint[])`, [keys],
  );
  return new Map(rows.map((row) => [Number(row.key), { ...row, key: Number(row.key) }]));
}
