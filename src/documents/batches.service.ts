import { randomUUID } from 'node:crypto';
import { writeIntoCollection } from '../collections/write-into-collection.js';
import type { CollectionRecord, DocumentRecord } from '../db/entities/index.js';
import { NotFoundError } from '../errors.js';
import type { SqlRunner } from '../plugins.js';
import type { RefusedFile } from '../uploads/multipart-files.js';
import { serializeAdmitted, type AdmittedFile } from './document-intake.js';
import { removeDocuments, type RemovalRuntime } from './document-removal.js';
import { documentFromRow, serializeDocument, type DocumentRow } from './documents.service.js';

/** One file of a batch, in request order. */
export interface BatchEntry {
  filename: string;
  document_id: string | null;
  /** `created`: a new document; `duplicate`: an existing copy was kept (on_duplicate skip); `rejected`: not stored. */
  outcome: 'created' | 'duplicate' | 'rejected';
  error?: { status: number; detail: string };
}

export const BATCH_SOURCES = ['upload', 'session'] as const;
export type BatchSource = typeof BATCH_SOURCES[number];

export interface BatchRecord {
  id: string;
  collection_id: string;
  source: BatchSource;
  files: BatchEntry[];
  created_at: string | Date;
}

/** Keys of `by_status`: the document statuses, plus files refused at upload and documents deleted since. */
export const BATCH_ENTRY_STATUSES = ['pending', 'processing', 'ready', 'failed', 'rejected', 'deleted'] as const;

export function newBatchId(): string {
  return randomUUID();
}

/** The batch row is written before its documents (with an empty manifest), so no document points at a missing batch. */
export async function openBatch(sql: SqlRunner, collection: CollectionRecord, batchId: string, source: BatchSource): Promise<void> {
  await writeIntoCollection(collection, () => sql(
    `insert into document_batches (id, collection_id, source, files, created_at) values (?, ?, ?, '[]'::jsonb, now())`, [batchId, collection.id, source],
  ));
}

export async function recordBatchFiles(sql: SqlRunner, batchId: string, entries: BatchEntry[]): Promise<void> {
  await sql('update document_batches set files = ?::jsonb where id = ?', [JSON.stringify(entries), batchId]);
}

export async function discardBatch(sql: SqlRunner, batchId: string): Promise<void> {
  await sql('delete from document_batches where id = ?', [batchId]);
}

export function admittedEntry(admitted: AdmittedFile): BatchEntry {
  return { filename: admitted.document.filename, document_id: admitted.document.id, outcome: admitted.duplicate ? 'duplicate' : 'created' };
}

export function refusedEntry(refused: RefusedFile): BatchEntry {
  return { filename: refused.filename, document_id: null, outcome: 'rejected', error: { status: refused.refusal.status, detail: refused.refusal.message } };
}

export function serializeRefused(entry: BatchEntry) {
  return { filename: entry.filename, status: 'rejected' as const, error: entry.error };
}

/** The POST answer: one result per file, in request order. */
export function serializeNewBatch(batchId: string, collection: CollectionRecord, results: Array<AdmittedFile | BatchEntry>) {
  return {
    batch_id: batchId,
    collection: collection.name,
    total: results.length,
    documents: results.map((result) => ('document' in result ? serializeAdmitted(result, collection.name) : serializeRefused(result))),
  };
}

export async function findBatch(sql: SqlRunner, collection: CollectionRecord, batchId: string): Promise<BatchRecord> {
  const [batch] = await sql<BatchRecord>('select id, collection_id, source, files, created_at from document_batches where id = ? and collection_id = ?', [batchId, collection.id]);
  if (!batch) throw new NotFoundError(`Batch ${batchId} not found in collection ${collection.name}`);
  if (batch.files.length > 0) return batch;
  // The manifest is written after the documents: a process that died in between left documents
  // pointing at this batch and no manifest, so they stand for it.
  const documents = await sql<{ id: string; filename: string }>('select id, filename from documents where batch_id = ? order by created_at, id', [batch.id]);
  return { ...batch, files: documents.map((document) => ({ filename: document.filename, document_id: document.id, outcome: 'created' as const })) };
}

async function documentsOf(sql: SqlRunner, batch: BatchRecord): Promise<Map<string, DocumentRecord>> {
  const ids = [...new Set(batch.files.map((entry) => entry.document_id).filter((id): id is string => id !== null))];
  if (ids.length === 0) return new Map();
  const rows = await sql<DocumentRow>('select * from documents where id = any(?::uuid[])', [ids]);
  return new Map(rows.map((row) => [row.id, documentFromRow(row)]));
}

function entryStatus(entry: BatchEntry, documents: Map<string, DocumentRecord>): (typeof BATCH_ENTRY_STATUSES)[number] {
  if (entry.outcome === 'rejected') return 'rejected';
  return documents.get(entry.document_id!)?.status ?? 'deleted';
}

function summarize(batch: BatchRecord, documents: Map<string, DocumentRecord>) {
  const byStatus = Object.fromEntries(BATCH_ENTRY_STATUSES.map((status) => [status, 0])) as Record<(typeof BATCH_ENTRY_STATUSES)[number], number>;
  for (const entry of batch.files) byStatus[entryStatus(entry, documents)] += 1;
  return { batch_id: batch.id, total: batch.files.length, by_status: byStatus, done: byStatus.pending === 0 && byStatus.processing === 0 };
}

/** `{batch_id, total, by_status, done}`: done when no document of the batch is pending or processing. */
export async function batchStatus(sql: SqlRunner, batch: BatchRecord) {
  return summarize(batch, await documentsOf(sql, batch));
}

/** The batch with the current record of each of its documents, in upload order. */
export async function batchDetails(sql: SqlRunner, collection: CollectionRecord, batch: BatchRecord) {
  const documents = await documentsOf(sql, batch);
  return {
    ...summarize(batch, documents),
    collection: collection.name,
    source: batch.source,
    created_at: new Date(batch.created_at).toISOString(),
    documents: batch.files.map((entry) => {
      if (entry.outcome === 'rejected') return serializeRefused(entry);
      const document = documents.get(entry.document_id!);
      if (!document) return { filename: entry.filename, id: entry.document_id, status: 'deleted' as const };
      return { ...serializeDocument(document, collection.name), duplicate: entry.outcome === 'duplicate' };
    }),
  };
}

/**
 * Deletes the documents the batch created (chunks, vectors, files) and the batch. Existing
 * documents a file of the batch duplicated belong to their own upload and stay.
 */
export async function deleteBatch(runtime: RemovalRuntime, collection: CollectionRecord, batch: BatchRecord): Promise<number> {
  const documents = await runtime.sql<{ id: string; storage_key: string | null }>(
    'select id, storage_key from documents where batch_id = ? and collection_id = ?', [batch.id, collection.id],
  );
  await removeDocuments(runtime, collection, documents.map((document) => ({ id: document.id, storageKey: document.storage_key })));
  await discardBatch(runtime.sql, batch.id);
  return documents.length;
}
