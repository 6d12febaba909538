import type { CollectionRecord, DocumentRecord } from '../db/entities/index.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { JobQueue } from '../ingestion/job-queue.js';
import type { SqlRunner } from '../plugins.js';
import { documentFromRow, type DocumentRow } from './documents.service.js';

/**
 * Re-ingests documents from their stored originals (after a chunking change, a parser upgrade or a
 * failure worth retrying): each goes back to `pending` with a new job, in one statement. Until the
 * new run finishes, the previous chunks stay searchable; the run replaces them. `condition` narrows
 * the documents requeued, `result` is what the statement returns.
 */
function requeueStatement(condition: string, result: string): string {
  return `
  with document as (
    update documents set status = 'pending', error = null, updated_at = now(),
      progress = '{"stage": "queued", "percent": 0, "message": "waiting for a worker (reprocessing)"}'::jsonb
    where collection_id = ? and status in ('ready', 'failed') ${condition}
      and (storage_key is not null or exists (select 1 from document_originals o where o.document_id = documents.id))
    returning *
  ), job as (
    insert into jobs (id, kind, collection_id, document_id, payload, status, attempts, max_attempts, run_after, created_at, updated_at)
    select gen_random_uuid(), 'ingest_document', collection_id, id, '{"reprocess": true}'::jsonb, 'queued', 0, 3, now(), now(), now() from document
  )
  ${result}`;
}

export async function reprocessDocument(sql: SqlRunner, queue: JobQueue, collection: CollectionRecord, documentId: string): Promise<DocumentRecord> {
  const [row] = await sql<DocumentRow>(requeueStatement('and id = ?', 'select * from document'), [collection.id, documentId]);
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
  // Waiting for its provider: tried now instead of at its next attempt.
  if (await queue.retryWaitingForProvider(collection.id, documentId) > 0) {
    const [waiting] = await sql<DocumentRow>('select * from documents where id = ?', [documentId]);
    if (waiting) return documentFromRow(waiting);
  }
  throw new ConflictError(`Document ${documentId} is ${existing.status}: it is already queued for ingestion`);
}

/**
 * Requeues every ready or failed document of the collection, and tries now those waiting for their
 * provider (`retried_now`); the others pending or processing are left as they are and counted as
 * skipped. `queued` and `skipped` come from the statement that requeues: its count of pending
 * documents reads the rows as they were before its update. Counted in a statement of its own
 * afterwards, a requeued document a worker had already finished was taken off `skipped`, which
 * could go below 0.
 */
export async function reprocessCollection(sql: SqlRunner, queue: JobQueue, collection: CollectionRecord): Promise<{ queued: number; skipped: number; retried_now: number }> {
  const [counts] = await sql<{ queued: string | number; skipped: string | number }>(requeueStatement('', `
    select (select count(*) from document) as queued,
      (select count(*) from documents where collection_id = ? and status in ('pending', 'processing')) as skipped`), [collection.id, collection.id]);
  const queued = Number(counts?.queued ?? 0);
  if (queued > 0) queue.notify();
  const retriedNow = await queue.retryWaitingForProvider(collection.id);
  return { queued, skipped: Number(counts?.skipped ?? 0) - retriedNow, retried_now: retriedNow };
}
