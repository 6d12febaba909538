import { randomUUID } from 'node:crypto';
import { writeIntoCollection } from '../collections/write-into-collection.js';
import type { CollectionRecord } from '../db/entities/index.js';
import { admittedEntry, batchStatus, discardBatch, findBatch, newBatchId, openBatch, recordBatchFiles } from '../documents/batches.service.js';
import { admitFiles, serializeAdmitted, type IntakeRuntime, type OnDuplicate } from '../documents/document-intake.js';
import { checkMetadata } from '../documents/metadata-rules.js';
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js';
import { DEFAULT_PAGE_LIMIT } from '../http/pagination.js';
import type { SqlRunner } from '../plugins.js';
import type { FileStore } from '../storage/file-store.js';
import type { ReceivedFile } from './multipart-files.js';

/**
 * An upload session collects files over several requests (many files, or large ones sent one per
 * request) and turns them into documents in one batch when completed. States (api-contract 5):
 * `open` → `completing` (its documents are being ingested) → `completed` (every one ready or
 * failed), or `open` → `cancelled`. Any other transition is a 409 naming the current state.
 */
export const SESSION_STATUSES = ['open', 'completing', 'completed', 'cancelled'] as const;
export type SessionStatus = typeof SESSION_STATUSES[number];

export interface SessionRow {
  id: string;
  collection_id: string;
  status: SessionStatus;
  metadata: Record<string, unknown>;
  on_duplicate: OnDuplicate;
  batch_id: string | null;
  created_at: string | Date;
  updated_at: string | Date;
  completed_at: string | Date | null;
  /** Cancelled for being left idle past `UPLOAD_SESSION_EXPIRY_HOURS` (upload-session-expiry.ts). */
  expired: boolean;
}

interface SessionFileRow {
  id: string;
  filename: string;
  content_type: string;
  size_bytes: string | number;
  sha256: string;
  storage_key: string;
  document_id: string | null;
  created_at: string | Date;
}

const iso = (value: string | Date | null) => (value === null ? null : new Date(value).toISOString());

export async function createSession(sql: SqlRunner, collection: CollectionRecord, input: { metadata: Record<string, unknown>; onDuplicate: OnDuplicate }): Promise<SessionRow> {
  // Checked now so that a session cannot be filled only to be refused at completion.
  checkMetadata(collection, input.metadata);
  const [row] = await writeIntoCollection(collection, () => sql<SessionRow>(
    `insert into upload_sessions (id, collection_id, status, metadata, on_duplicate, batch_id, created_at, updated_at)
     values (?, ?, 'open', ?::jsonb, ?, null, now(), now()) returning *`,
    [randomUUID(), collection.id, JSON.stringify(input.metadata), input.onDuplicate],
  ));
  return row!;
}

export async function findSession(sql: SqlRunner, collection: CollectionRecord, id: string): Promise<SessionRow> {
  const [row] = await sql<SessionRow>('select * from upload_sessions where id = ? and collection_id = ?', [id, collection.id]);
  if (!row) throw new NotFoundError(`Upload session ${id} not found in collection ${collection.name}`);
  return row;
}

function wrongState(session: { id: string; status: SessionStatus; expired?: boolean }, action: string): ConflictError {
  const why = session.expired ? ' (it expired: no file was added to it for longer than UPLOAD_SESSION_EXPIRY_HOURS, and its files were removed)' : '';
  return new ConflictError(`Upload session ${session.id} is ${session.status}${why}: only an open session can ${action}`);
}

/**
 * Marks the open session active now, before its files stream in, so it cannot expire while a
 * long upload is on its way; a session no longer open is a 409 (or 404 when deleted) here, before
 * any byte is stored.
 */
export async function touchOpenSession(sql: SqlRunner, session: SessionRow, action: string): Promise<SessionRow> {
  const [touched] = await sql<SessionRow>(`update upload_sessions set updated_at = now() where id = ? and status = 'open' returning *`, [session.id]);
  if (!touched) throw await noLongerOpen(sql, session, action);
  return touched;
}

/**
 * Adds stored files to the session, in one statement that only writes while it is open; answers the
 * session as it is now and the ids of the files added, in order.
 */
export async function addSessionFiles(sql: SqlRunner, session: SessionRow, files: ReceivedFile[]): Promise<{ session: SessionRow; added: string[] }> {
  const rows = files.map((file, index) => ({
    id: randomUUID(), ord: index, filename: file.filename, content_type: file.contentType, size_bytes: file.upload.sizeBytes,
    sha256: file.upload.sha256, storage_key: file.upload.storageKey,
  }));
  const inserted = await sql<{ id: string }>(
    `insert into upload_session_files (id, session_id, filename, content_type, size_bytes, sha256, storage_key, document_id, created_at)
     select r.id, s.id, r.filename, r.content_type, r.size_bytes, r.sha256, r.storage_key, null, now() + r.ord * interval '1 microsecond'
     from jsonb_to_recordset(?::jsonb) as r(id uuid, ord int, filename text, content_type text, size_bytes bigint, sha256 text, storage_key text)
     cross join (select id from upload_sessions where id = ? and status = 'open' for share) as s
     returning id`,
    [JSON.stringify(rows), session.id],
  );
  // Completed, cancelled or expired while the files were streaming in, or deleted (a truncate). The
  // share lock orders this insert and those changes: one in flight ends first and the session is
  // seen closed, or waits until the files are in, and a completion or cancel reads the files after
  // its status change. A key-share lock (until 2026-12-01) did not wait for a status change, so a
  // cancel's removal could miss files going in as it ran. A deletion in flight was already waited
  // for, where the rows went in and failed their foreign key (a 500).
  if (inserted.length === 0 && rows.length > 0) throw await noLongerOpen(sql, session, 'take files');
  const [updated] = await sql<SessionRow>('update upload_sessions set updated_at = now() where id = ? returning *', [session.id]);
  return { session: updated ?? session, added: rows.map((row) => row.id) };
}

/**
 * Why a write conditioned on the session being open changed nothing: it was completed or cancelled
 * meanwhile (409), or it is gone, deleted with its collection (404; it was a 409 saying the
 * session "is open").
 */
async function noLongerOpen(sql: SqlRunner, session: SessionRow, action: string): Promise<ConflictError | NotFoundError> {
  const [row] = await sql<SessionRow>('select * from upload_sessions where id = ?', [session.id]);
  return row ? wrongState(row, action) : deletedMeanwhile(session);
}

function deletedMeanwhile(session: SessionRow): NotFoundError {
  return new NotFoundError(`Upload session ${session.id} not found: it was deleted (its collection truncated or deleted) while this request was handled`);
}

async function sessionFiles(sql: SqlRunner, sessionId: string): Promise<SessionFileRow[]> {
  return sql<SessionFileRow>('select * from upload_session_files where session_id = ? order by created_at, id', [sessionId]);
}

/**
 * Turns the session's files into documents, all in one batch (`source: "session"`). The session
 * is claimed with a conditional update, so two concurrent completions cannot both run; on failure
 * (metadata no longer valid, say) it is open again and its files are kept.
 */
export async function completeSession(runtime: IntakeRuntime, collection: CollectionRecord, session: SessionRow) {
  const [anyFile] = await runtime.sql('select 1 from upload_session_files where session_id = ? limit 1', [session.id]);
  if (session.status === 'open' && !anyFile) {
    // Files go with their session: none, and no session either, is a session deleted since it was found.
    const [present] = await runtime.sql('select 1 from upload_sessions where id = ?', [session.id]);
    if (!present) throw deletedMeanwhile(session);
    throw new BadRequestError(`Upload session ${session.id} has no files: add some with PUT .../uploads/${session.id}/files first`);
  }
  const [claimed] = await runtime.sql<SessionRow>(
    `update upload_sessions set status = 'completing', updated_at = now() where id = ? and status = 'open' returning *`, [session.id],
  );
  if (!claimed) throw await noLongerOpen(runtime.sql, session, 'be completed');
  // Read once claimed: a file added until then is in, none can come after (addSessionFiles). Read
  // before the claim (until 2026-12-01), a file added between the two was answered 200 and never
  // ingested, nor removed.
  const files = await sessionFiles(runtime.sql, session.id);
  const batchId = newBatchId();
  let admitted;
  try {
    await openBatch(runtime.sql, collection, batchId, 'session');
    admitted = await admitFiles(runtime, collection, files.map((file) => ({
      filename: file.filename, contentType: file.content_type,
      upload: { storageKey: file.storage_key, content: null, sizeBytes: Number(file.size_bytes), sha256: file.sha256 },
    })), { metadata: claimed.metadata, onDuplicate: claimed.on_duplicate, batchId });
  } catch (error) {
    await discardBatch(runtime.sql, batchId);
    await runtime.sql(`update upload_sessions set status = 'open', updated_at = now() where id = ?`, [session.id]);
    throw error;
  }
  await recordBatchFiles(runtime.sql, batchId, admitted.map(admittedEntry));
  await runtime.sql(
    `update upload_session_files f set document_id = u.document_id from jsonb_to_recordset(?::jsonb) as u(id uuid, document_id uuid) where f.id = u.id`,
    [JSON.stringify(files.map((file, index) => ({ id: file.id, document_id: admitted[index]!.document.id })))],
  );
  const [completing] = await runtime.sql<SessionRow>('update upload_sessions set batch_id = ?, updated_at = now() where id = ? returning *', [batchId, session.id]);
  // A truncate deleted the session meanwhile (and the documents made before it); this was a 500.
  if (!completing) throw new NotFoundError(`Upload session ${session.id} not found: it was deleted (its collection truncated) while it was being completed`);
  return { session: completing, documents: admitted.map((entry) => serializeAdmitted(entry, collection.name)) };
}

/**
 * Cancels an open session and removes its stored files (in a request per 1,000 on S3; it was two a
 * file, one after another); the session stays readable as `cancelled`.
 */
export async function cancelSession(sql: SqlRunner, files: Pick<FileStore, 'removeMany'>, session: SessionRow): Promise<void> {
  const [cancelled] = await sql<SessionRow>(`update upload_sessions set status = 'cancelled', updated_at = now() where id = ? and status = 'open' returning *`, [session.id]);
  if (!cancelled) throw await noLongerOpen(sql, session, 'be cancelled');
  await removeSessionFiles(sql, files, session.id);
}

/**
 * Cancels, as expired, the open sessions no file was added to since `idleSince` (nor opened
 * after it), and removes their files; returns how many. The condition is checked again by each
 * update, so a session that took a file meanwhile stays open.
 */
export async function expireIdleSessions(sql: SqlRunner, files: Pick<FileStore, 'removeMany'>, idleSince: Date): Promise<number> {
  const idle = await sql<{ id: string }>(
    `select id from upload_sessions where status = 'open' and updated_at < ?::timestamptz order by updated_at limit 1000`, [idleSince.toISOString()],
  );
  let expired = 0;
  for (const { id } of idle) {
    const [cancelled] = await sql<{ id: string }>(
      `update upload_sessions set status = 'cancelled', expired = true, updated_at = now()
       where id = ? and status = 'open' and updated_at < ?::timestamptz returning id`, [id, idleSince.toISOString()],
    );
    if (!cancelled) continue;
    await removeSessionFiles(sql, files, id);
    expired += 1;
  }
  return expired;
}

async function removeSessionFiles(sql: SqlRunner, files: Pick<FileStore, 'removeMany'>, sessionId: string): Promise<void> {
  const stored = await sql<{ storage_key: string }>('delete from upload_session_files where session_id = ? returning storage_key', [sessionId]);
  await files.removeMany(stored.map((file) => file.storage_key), []);
}

/** A batch deleted since counts as done: nothing of it is left to ingest. */
async function batchDone(sql: SqlRunner, collection: CollectionRecord, batchId: string): Promise<boolean> {
  try {
    return (await batchStatus(sql, await findBatch(sql, collection, batchId))).done;
  } catch (error) {
    if (error instanceof NotFoundError) return true;
    throw error;
  }
}

/**
 * Which files a session view lists: a page of them in upload order, or those a request just added.
 * A session may hold tens of thousands of files; listing all of them in every answer made adding
 * files one request at a time quadratic in bytes sent back.
 */
export type SessionFilesShown = { limit: number; offset: number } | { ids: string[] };

/**
 * The session as the API shows it. A `completing` session whose batch has finished (every
 * document ready or failed) is `completed` from then on.
 */
export async function sessionView(
  sql: SqlRunner, collection: CollectionRecord, session: SessionRow, expiryMs: number, shown: SessionFilesShown = { limit: DEFAULT_PAGE_LIMIT, offset: 0 },
) {
  let current = session;
  if (current.status === 'completing' && current.batch_id) {
    if (await batchDone(sql, collection, current.batch_id)) {
      const [updated] = await sql<SessionRow>(
        `update upload_sessions set status = 'completed', completed_at = now(), updated_at = now() where id = ? and status = 'completing' returning *`, [current.id],
      );
      current = updated ?? current;
    }
  }
  const [totals] = await sql<{ count: string | number; bytes: string | number }>(
    'select count(*) as count, coalesce(sum(size_bytes), 0) as bytes from upload_session_files where session_id = ?', [current.id],
  );
  const files = 'ids' in shown
    ? await sql<SessionFileRow>('select * from upload_session_files where id = any(?::uuid[]) order by created_at, id', [shown.ids])
    : await sql<SessionFileRow>('select * from upload_session_files where session_id = ? order by created_at, id limit ? offset ?', [current.id, shown.limit, shown.offset]);
  return {
    id: current.id,
    collection: collection.name,
    status: current.status,
    metadata: current.metadata,
    on_duplicate: current.on_duplicate,
    batch_id: current.batch_id,
    file_count: Number(totals!.count),
    total_bytes: Number(totals!.bytes),
    files: files.map((file) => ({
      id: file.id, filename: file.filename, content_type: file.content_type, size_bytes: Number(file.size_bytes), sha256: file.sha256,
      document_id: file.document_id, created_at: iso(file.created_at),
    })),
    created_at: iso(current.created_at),
    updated_at: iso(current.updated_at),
    completed_at: iso(current.completed_at),
    expires_at: current.status === 'open' && expiryMs > 0 ? new Date(new Date(current.updated_at).getTime() + expiryMs).toISOString() : null,
    expired: current.expired,
  };
}
