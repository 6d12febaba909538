import type { CollectionRecord, DocumentRecord } from '../db/entities/index.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { JobQueue } from '../ingestion/job-queue.js';
import type { SqlRunner } from '../plugins.js';
import { documentFromRow, type DocumentRow } from './documents.service.js';

/**
 * Re-ingests documents from their stored originals (after a chunking change, a parser upgrade or a
 * failure worth retrying): each goes back to `pending` with a new job, in one statement. Until the
 * new run finishes, the previous chunks stay searchable; the run replaces them.
 */
const REQUEUE = `
  with document as (
    update documents set status = 'pending', error = null, updated_at = now(),
      progress = '{"stage": "queued", "percent": 0, "message": "waiting for a worker (reprocessing)"}'::jsonb
    where collection_id = ? and status in ('ready', 'failed') %s
      and (storage_key is not null or exists (select 1 from document_originals o where o.document_id = documents.id))
    returning *
  ), job as (
    insert into jobs (id, kind, collection_id, document_id, payload, status, attempts, max_attempts, run_after, created_at, updated_at)
    select gen_random_uuid(), 'ingest_document', collection_id, id, '{"reprocess": true}'::jsonb, 'queued', 0, 3, now(), now(), now() from document
  )
  select * from document`;

export async function reprocessDocument(sql: SqlRunner, queue: JobQueue, collection: CollectionRecord, documentId: string): Promise<DocumentRecord> {
  const [row] = await sql<DocumentRow>(REQUEUE.replace('%s', 'and id = ?'), [collection.id, documentId]);
  if (row) {
    queue.notify();
    return documentFromRow(row);
  }
  const [existing] = await sql<{ status: string; has_original: boolean }>(
    `select status, storage_key is not null or exists (select 1 from document_originals o where o.document_id = d.id) as has_original
     from documents d where id = ? and collection_id = ?`,
    [documentId, collection.id],
  );
  if (!existing) throw new NotFoundError(`Document ${documentId} not found in collection ${collection.name}`);
  if (!existing.has_original) throw new ConflictError(`Document ${documentId} has no stored original to reprocess`);
  throw new ConflictError(`Document ${documentId} is ${existing.status}: it is already queued for ingestion`);
}

/** Requeues every ready or failed document of the collection; those already pending or processing are left as they are. */
export async function reprocessCollection(sql: SqlRunner, queue: JobQueue, collection: CollectionRecord): Promise<{ queued: number; skipped: number }> {
  const rows = await sql<DocumentRow>(REQUEUE.replace('%s', ''), [collection.id]);
  if (rows.length > 0) queue.notify();
  const [rest] = await sql<{ count: string | number }>(`select count(*) as count from documents where collection_id = ? and status in ('pending', 'processing')`, [collection.id]);
  return { queued: rows.length, skipped: Number(rest?.count ?? 0) - rows.length };
}
