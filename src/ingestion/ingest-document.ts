import { chunkElementsSharingText, type ElementChunk } from '../chunking/chunk-elements.js';
import { isDatabaseUnavailable } from '../db/connection-failures.js';
import type { CollectionRecord, DocumentProgress } from '../db/entities/index.js';
import { storableText } from '../db/storable-values.js';
import { deleteChunksByKey, insertChunks } from '../documents/chunk-store.js';
import type { StoredElementImages } from '../documents/element-files.js';
import { embedChunkTexts, isRetryableEmbeddingFailure } from '../embedding/embed-chunk-texts.js';
import { ProviderError } from '../errors.js';
import { loadCodeLanguageNames } from '../parsing/code-language-names.js';
import { withPictureSizes } from '../parsing/picture-sizes.js';
import { storableParsedDocument } from '../parsing/storable-document.js';
import type { DocumentElement, EmbeddingModel, Parser, SqlRunner, VectorStore } from '../plugins.js';
import type { KeywordIndex } from '../search/keyword/keyword-index.js';
import { removeEntriesOfDeletedRows, removeFromIndexes } from '../search/search-indexes.js';
import { FileStoreUnavailableError, type FileStore } from '../storage/file-store.js';
import { setImmediate as nextEventLoopTurn } from 'node:timers/promises';
import { BatchProgress } from './batch-progress.js';
import { detectParser } from './parser-selection.js';
import { withAttachedFiles } from './attached-files.js';
import { chunkRows, codeLanguageTag, elementRows, embeddingInput, type ChunkRow, type DocumentRow, type PreparedDocument } from './ingestion-rows.js';

export interface IngestionRuntime {
  sql: SqlRunner;
  files: FileStore;
  parsers: readonly Parser[];
  vectorStore: VectorStore;
  keywordIndex: KeywordIndex;
  embeddingModelFor(collection: CollectionRecord): EmbeddingModel;
  loadCollection(collectionId: string): Promise<CollectionRecord | null>;
  /** Records that the collection's content changed (bumps its write version). */
  recordWrite(collectionId: string): Promise<void>;
  /** Keeps image elements' pictures as files (multimodal collections) and captions them (enrichment). */
  storeElementImages(collection: CollectionRecord, documentId: string, elements: DocumentElement[]): Promise<StoredElementImages>;
}

/**
 * A failure that names the stage it happened in; `retryable` failures are worth another attempt.
 * `databaseUnavailable`: the database could not be reached, nothing is wrong with the document.
 * `providerUnavailable`: a model provider is down, unreachable or rate-limiting past its client's
 * retries, nothing is wrong with the document either; with how long it asked to be left alone.
 */
export class IngestionError extends Error {
  constructor(
    readonly stage: string, message: string, readonly retryable: boolean, readonly databaseUnavailable = false,
    readonly providerUnavailable: { retryAfterMs: number | undefined } | null = null,
  ) {
    super(message);
  }
}

export interface DocumentOutcome {
  documentId: string;
  /**
   * `gone`: deleted while queued or ingested, or its job is no longer the holder's (see embedAndIndex).
   * `failed`: this document cannot be ingested (the others go on).
   */
  status: 'ready' | 'failed' | 'gone';
  error?: IngestionError;
}

/** Chunks embedded and written together; bounds the vectors held at once (see embedAndIndex). */
const CHUNK_SLICE = 4096;
/** Element rows per statement: one statement for a batch of small documents, bounded statements for a large one. */
const ELEMENT_ROWS_PER_STATEMENT = 2000;
/** Progress is written at most this often: each write is a statement on PGlite's one connection (~1 ms). */
const PROGRESS_INTERVAL_MS = 250;

/**
 * A short reason for the document's `error`: database errors from the driver start with the whole
 * statement (every chunk text of a batch), which is noise to a reader and may be megabytes.
 */
function conciseMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const afterStatement = /^\s*(?:insert|update|delete|select|with)\b[\s\S]* - ([^\n]+)$/i.exec(message)?.[1] ?? message;
  // Stored as the document's error: a parser's message may quote the file (a NUL in a text column fails the write).
  return storableText(afterStatement.length > 500 ? `${afterStatement.slice(0, 500)}...` : afterStatement);
}

/**
 * A statement the database refused for the values it was given: SQLSTATE class 22, data exception
 * (a NUL in text, an escape jsonb does not take, a number out of range). The same rows are refused
 * on every attempt, so their document fails at once: retried as if the database were away, such a
 * document went through all three attempts, waiting out 2 s and 4 s of backoff, to fail the same way.
 */
function isDataException(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

function asIngestionError(stage: string, error: unknown, retryable: boolean): IngestionError {
  if (error instanceof IngestionError) return error;
  const providerUnavailable = error instanceof ProviderError && error.retryable ? { retryAfterMs: error.retryAfterMs } : null;
  return new IngestionError(stage, conciseMessage(error), retryable, isDatabaseUnavailable(error), providerUnavailable);
}

async function writeProgress(sql: SqlRunner, updates: Array<{ id: string; progress: DocumentProgress }>): Promise<void> {
  if (updates.length === 0) return;
  await sql(
    // Only while processing: a write due after a batch was handed back must not claim its documents again.
    // Documents another transaction holds are passed over, never waited for: the next write brings
    // their progress, and a wait made this write part of deadlocks with deletions and truncates.
    `update documents d set progress = u.progress, updated_at = now()
     from jsonb_to_recordset(?::jsonb) as u(id uuid, progress jsonb)
     where d.id = u.id and d.status = 'processing'
       and d.id in (select id from documents where id = any(?::uuid[]) for no key update skip locked)`,
    [JSON.stringify(updates), updates.map((update) => update.id)],
  );
}

/**
 * Starts reading a document's original: from its row when it was small, else from the file store.
 * The storage error would name a server path; the client only needs to know the file is gone. A
 * bucket that is unavailable fails the document for a retry instead: the file is not gone.
 * Awaited later (the next file is read while the current one is parsed), so a failure must not
 * count as unhandled meanwhile.
 */
function readOriginal(runtime: IngestionRuntime, row: DocumentRow): Promise<Buffer> {
  if (row.original !== null) return Promise.resolve(Buffer.from(row.original, 'base64'));
  const reading = row.storage_key
    ? runtime.files.read(row.storage_key).catch((error: unknown) => {
      if (error instanceof FileStoreUnavailableError) throw new IngestionError('parsing', `could not read the original: ${error.message}`, true);
      throw new Error('the original file is missing or unreadable');
    })
    : Promise.reject(new Error('the original file is missing'));
  reading.catch(() => undefined);
  return reading;
}

/** Parses and chunks one document; failures here are the document's own (bad file), never retried. */
async function parseAndChunk(runtime: IngestionRuntime, collection: CollectionRecord, row: DocumentRow, original: Promise<Buffer>, progress: Progress | null): Promise<PreparedDocument> {
  let parsed;
  let choice;
  try {
    const data = await original;
    choice = await detectParser(runtime.parsers, { filename: row.filename, contentType: row.content_type, data });
    // Every parser's result passes here, whichever parser and thread made it: made storable once (a
    // NUL or half a surrogate pair failed the write), before images, chunks and rows are made from it.
    const own = await choice.parser.parse({ filename: row.filename, contentType: choice.contentType, data });
    const storable = storableParsedDocument(await withAttachedFiles(runtime.parsers, own));
    parsed = { ...storable, elements: withPictureSizes(storable.elements) };
  } catch (error) {
    throw asIngestionError('parsing', error, false);
  }
  let images: StoredElementImages;
  try {
    images = await runtime.storeElementImages(collection, row.id, parsed.elements);
  } catch (error) {
    throw asIngestionError('storing images', error, true);
  }
  await progress?.('chunking', 15, `chunking ${row.filename}`);
  let chunked: { elements: DocumentElement[]; chunks: ElementChunk[] };
  try {
    chunked = chunkElementsSharingText(images.elements, { chunkSize: collection.chunkSize, chunkOverlap: collection.chunkOverlap, strategy: collection.chunkStrategy });
  } catch (error) {
    throw asIngestionError('chunking', error, false);
  }
  const { elements, chunks } = chunked;
  // A document with nothing to search was marked ready with 0 chunks, and nothing told its uploader why it was never found.
  if (chunks.length === 0) throw new IngestionError('parsing', `the file holds no text to index${choice.parser.mayHoldScans ? ' (scanned pages and pictures need OCR first, which the service does not do)' : ''}`, false);
  const sourceMetadata = JSON.parse(JSON.stringify(parsed.metadata ?? {})) as Record<string, unknown>;
  const codeLanguageNames = elements.some((element) => codeLanguageTag(element) !== undefined) ? await loadCodeLanguageNames() : undefined;
  return { row, title: parsed.title, sourceMetadata, elements, elementFiles: images.files, chunks, ...(codeLanguageNames ? { codeLanguageNames } : {}) };
}

/**
 * Replaces the documents' elements. Their chunks are not removed here: a chunk's id follows from
 * its document's id and index (documentChunkId), so each new chunk replaces the old one of that
 * index in place (rows and index entries by key), and a reprocessed document stays searchable
 * throughout; the old chunks past the new count go at the end (removeChunksPastTheEnd).
 */
async function replaceElements(runtime: IngestionRuntime, documents: PreparedDocument[]): Promise<void> {
  const { sql } = runtime;
  const ids = documents.map((document) => document.row.id);
  await sql('delete from document_elements where document_id = any(?::uuid[])', [ids]);
  const elementCount = documents.reduce((sum, document) => sum + document.elements.length, 0);
  for (let start = 0; start < elementCount; start += ELEMENT_ROWS_PER_STATEMENT) {
    await sql(
      // The documents are checked and locked once, as insertChunks does (migration 0008).
      `with live_documents as (select id from documents where id = any(?::uuid[]) order by id for key share)
       insert into document_elements (id, document_id, element_index, type, text, heading_path, page, metadata,
         storage_key, content_type, size_bytes, caption, caption_status, caption_error)
       select gen_random_uuid(), r.document_id, r.element_index, r.type, r.text, r.heading_path, r.page, r.metadata,
         r.storage_key, r.content_type, r.size_bytes, r.caption, r.caption_status, r.caption_error
       from jsonb_to_recordset(?::jsonb) as r(document_id uuid, element_index int, type text, text text, heading_path jsonb, page int, metadata jsonb,
         storage_key text, content_type text, size_bytes bigint, caption text, caption_status text, caption_error text)
       where r.document_id in (select id from live_documents)`,
      [ids, JSON.stringify(elementRows(documents, start, start + ELEMENT_ROWS_PER_STATEMENT))],
    );
  }
}

/**
 * Removes the chunks a previous run (a reprocess, or an interrupted attempt) wrote past the
 * documents' new chunk counts. By document id, not a join: the embedded database never analyses
 * its tables, and a join against a record set read every chunk row.
 */
async function removeChunksPastTheEnd(runtime: IngestionRuntime, collection: CollectionRecord, documents: PreparedDocument[]): Promise<void> {
  const counts = Object.fromEntries(documents.map((document) => [document.row.id, document.chunks.length]));
  const rows = await runtime.sql<{ key: string | number }>(
    'select key from chunks where document_id = any(?::uuid[]) and chunk_index >= (?::jsonb ->> document_id::text)::int',
    [Object.keys(counts), JSON.stringify(counts)],
  );
  const keys = rows.map((row) => Number(row.key));
  await removeFromIndexes(runtime, collection.id, keys);
  await deleteChunksByKey(runtime.sql, keys);
}

/** Chunk rows, then both indexes, for one slice of chunks and their vectors. */
async function writeChunks(runtime: IngestionRuntime, collection: CollectionRecord, rows: ChunkRow[], vectors: Float32Array[]): Promise<void> {
  const keys = await insertChunks(runtime.sql, collection.id, rows);
  // A document deleted while it was being ingested has no rows written (null keys): it is gone.
  const written = rows.flatMap((row, index) => (keys[index] === null ? [] : [{ row, key: keys[index]!, embedding: vectors[index]! }]));
  await runtime.keywordIndex.add(collection.id, written.map(({ row, key }) => ({ key, text: row.text, metadata: row.metadata, tenant: row.tenant })));
  await runtime.vectorStore.upsert(written.map(({ row, key, embedding }) => ({
    key, collectionId: collection.id, documentId: row.documentId, embedding, metadata: row.metadata, tenant: row.tenant,
  })));
  await removeEntriesOfDeletedRows(runtime.sql, runtime, collection.id, written.map(({ key }) => key), (id) => runtime.recordWrite(id));
}

type Progress = (stage: string, percent: number, message: string) => Promise<void>;

/**
 * Embeds and writes the prepared documents, CHUNK_SLICE chunks at a time, then marks them ready:
 * those whose jobs `holder` still holds, which it returns. A job taken over after its lease lapsed
 * (a run stalled past JOB_LEASE_S) or handed back at a stop is another run's: the stalled run used
 * to mark its document ready while the new run had it processing.
 * Only two slices' vectors exist at once (the one being written and the next, embedded meanwhile):
 * a 200 MB text (~340k chunks) otherwise held every vector as JavaScript numbers (GiBs) and kept the
 * thread busy for minutes (bench/ingest-memory). Embedding runs on other threads or at a provider,
 * so the first slice is embedded while the old elements are replaced, and each next slice while the
 * current one is written. An embedding failure is an IngestionError of stage `embedding`; a write
 * failure is thrown as is.
 */
async function embedAndIndex(runtime: IngestionRuntime, collection: CollectionRecord, documents: PreparedDocument[], progress: Progress, holder: string): Promise<Set<string>> {
  const chunkCount = documents.reduce((sum, document) => sum + document.chunks.length, 0);
  const model = runtime.embeddingModelFor(collection);
  const embedSlice = (start: number): { rows: ChunkRow[]; vectors: Promise<Float32Array[]> } => {
    const rows = chunkRows(documents, start, start + CHUNK_SLICE);
    const vectors = embedChunkTexts(model, rows.map(embeddingInput), collection.dimension, (embedded) =>
      progress('embedding', 25 + (65 * (start + embedded)) / chunkCount, `embedded ${start + embedded} of ${chunkCount} chunks`),
    ).catch((error: unknown) => {
      throw asIngestionError('embedding', error, isRetryableEmbeddingFailure(error));
    });
    // Awaited below; until then a failure must not count as unhandled (a write may fail first).
    vectors.catch(() => undefined);
    return { rows, vectors };
  };
  let next = embedSlice(0);
  await replaceElements(runtime, documents);
  for (let start = 0; start < chunkCount; start += CHUNK_SLICE) {
    const { rows } = next;
    const vectors = await next.vectors;
    if (start + CHUNK_SLICE < chunkCount) next = embedSlice(start + CHUNK_SLICE);
    await progress('indexing', 25 + (65 * (start + rows.length)) / chunkCount, `indexing chunks ${start + 1}-${start + rows.length} of ${chunkCount}`);
    await writeChunks(runtime, collection, rows, vectors);
  }
  await removeChunksPastTheEnd(runtime, collection, documents);
  // The version moves before the documents are ready: the other way round, a client that saw one
  // ready could still be answered from the cache with what was found before it (PostgreSQL).
  await runtime.recordWrite(collection.id);
  const ready = await runtime.sql<{ id: string }>(
    `update documents d set status = 'ready', error = null, chunk_count = u.chunk_count, title = coalesce(u.title, d.title),
       source_metadata = u.source_metadata,
       progress = jsonb_build_object('stage', 'done', 'percent', 100, 'message', u.chunk_count || case when u.chunk_count = 1 then ' chunk indexed' else ' chunks indexed' end),
       processed_at = now(), updated_at = now()
     from jsonb_to_recordset(?::jsonb) as u(id uuid, chunk_count int, title text, source_metadata jsonb)
     where d.id = u.id and exists (select 1 from jobs j where j.document_id = d.id and j.status = 'running' and j.locked_by = ?)
     returning d.id`,
    [JSON.stringify(documents.map((document) => ({
      id: document.row.id, chunk_count: document.chunks.length, title: document.title ?? null, source_metadata: document.sourceMetadata,
    }))), holder],
  );
  return new Set(ready.map((row) => row.id));
}

/**
 * After a failed batch write, finds the documents that cannot be written by writing each alone:
 * those fail (the others end ready). When none can be written the cause is not a document (the
 * database is away), so the whole batch is retried; unless the database refused each for its
 * values (isDataException), which says the cause is each document.
 */
async function indexOneByOne(
  runtime: IngestionRuntime, collection: CollectionRecord, documents: PreparedDocument[], outcomes: Map<string, DocumentOutcome>, progress: Progress, holder: string,
): Promise<void> {
  const failures: Array<[PreparedDocument, unknown]> = [];
  for (const document of documents) {
    try {
      const ready = await embedAndIndex(runtime, collection, [document], progress, holder);
      outcomes.set(document.row.id, { documentId: document.row.id, status: ready.has(document.row.id) ? 'ready' : 'gone' });
    } catch (error) {
      if (error instanceof IngestionError && error.stage === 'embedding') throw error;
      failures.push([document, error]);
    }
  }
  if (failures.length === documents.length && !failures.every(([, error]) => isDataException(error))) throw asIngestionError('indexing', failures[0]![1], true);
  for (const [document, error] of failures) {
    outcomes.set(document.row.id, { documentId: document.row.id, status: 'failed', error: asIngestionError('indexing', error, false) });
  }
}

/**
 * Parses and chunks the documents, reading each next file while the current one is parsed; a
 * document that cannot be parsed is marked failed in `outcomes`. A function of its own so that the
 * originals are unreachable once it returns: kept in the caller's frame, a 200 MB file's bytes
 * lived until its last chunk was written.
 */
async function prepareDocuments(runtime: IngestionRuntime, collection: CollectionRecord, rows: DocumentRow[], outcomes: Map<string, DocumentOutcome>, progress: Progress): Promise<PreparedDocument[]> {
  const documents: PreparedDocument[] = [];
  let nextOriginal = readOriginal(runtime, rows[0]!);
  for (const [index, row] of rows.entries()) {
    const original = nextOriginal;
    if (index + 1 < rows.length) nextOriginal = readOriginal(runtime, rows[index + 1]!);
    // Lets requests that arrived meanwhile be answered. PGlite runs statements synchronously and
    // small originals are read with blocking calls, so a batch otherwise awaits only microtasks and
    // holds the thread to its end (a batch-status request waited 600 ms over 200 documents). Once a
    // document, where the asynchronous read used to let requests in: yielding around every write as
    // well measured 604-716 against 690-852 chunks/s, as uploads ran ahead of the workers.
    await nextEventLoopTurn();
    try {
      // The documents of a batch share one progress: it names the stage of a batch of one only, as
      // parsing and chunking alternate from document to document.
      documents.push(await parseAndChunk(runtime, collection, row, original, rows.length === 1 ? progress : null));
    } catch (error) {
      outcomes.set(row.id, { documentId: row.id, status: 'failed', error: asIngestionError('parsing', error, false) });
    }
  }
  return documents;
}

/**
 * Parses, chunks, embeds and indexes a batch of documents of one collection. Writes go out in
 * bulk statements: a statement costs ~1 ms on PGlite whatever its size, so one document at a time
 * tops out near 30 documents/s there. A document whose file cannot be read fails alone; a failure
 * while embedding or writing fails the batch with a retryable error, but for one the database gave
 * for the values written (isDataException). Re-running is safe: previous chunks and index entries
 * of the documents are replaced. What was written of a document that did not end ready (failed, or
 * the batch failed) stays: the caller takes it back (takeBackWrittenParts) once it knows the job is
 * still its own, since a job handed back or taken over meanwhile is another run's, and so are the
 * chunks of its document. `holder` is the worker id (JobQueue.workerId) that claimed the jobs.
 */
export async function ingestDocuments(runtime: IngestionRuntime, collectionId: string, documentIds: string[], holder: string): Promise<DocumentOutcome[]> {
  const { sql } = runtime;
  const outcomes = new Map<string, DocumentOutcome>(documentIds.map((id) => [id, { documentId: id, status: 'gone' }]));
  const collection = await runtime.loadCollection(collectionId);
  if (!collection) return [...outcomes.values()];
  // Read and marked processing in one statement (a statement is ~7 ms of a batch's ~100 on PGlite).
  const rows = await sql<DocumentRow>(
    // A subquery by primary key, not a join: the embedded database never analyses its tables, and
    // without statistics the join scanned every original (23 ms a batch of 64 at 5,000 documents).
    // Base64, not bytea: PGlite decodes bytea's hex text in JavaScript, 0.2 ms for 2 KB.
    // Locked in id order, as deletions and truncates lock documents: in whatever order the update
    // met them, it was in most of the deadlocks left in a probe racing truncates with uploads.
    `update documents d set status = 'processing', updated_at = now(), progress = jsonb_build_object(
       'stage', 'parsing', 'percent', 5, 'message', case when ?::int = 1 then 'parsing ' || d.filename else ?::text end)
     where d.id = any(?::uuid[]) and d.collection_id = ?
       and d.id in (select id from documents where id = any(?::uuid[]) order by id for no key update)
     returning d.id, d.collection_id, d.filename, d.content_type, d.storage_key, d.metadata, d.tenant,
       (select encode(o.content, 'base64') from document_originals o where o.document_id = d.id) as original`,
    [documentIds.length, `parsing ${documentIds.length} documents`, documentIds, collectionId, documentIds],
  );
  if (rows.length === 0) return [...outcomes.values()];

  const batchProgress = new BatchProgress((update) => writeProgress(sql, rows
    .filter((row) => outcomes.get(row.id)!.status !== 'failed')
    .map((row) => ({ id: row.id, progress: update }))), PROGRESS_INTERVAL_MS);
  const progress: Progress = (stage, percent, message) => batchProgress.report({ stage, percent: Math.round(percent), message });
  try {
    const documents = await prepareDocuments(runtime, collection, rows, outcomes, progress);
    const chunkCount = documents.reduce((sum, document) => sum + document.chunks.length, 0);
    await progress('embedding', 25, `embedding ${chunkCount} chunks`);
    try {
      const ready = await embedAndIndex(runtime, collection, documents, progress, holder);
      for (const document of documents) outcomes.set(document.row.id, { documentId: document.row.id, status: ready.has(document.row.id) ? 'ready' : 'gone' });
    } catch (error) {
      if ((error instanceof IngestionError && error.stage === 'embedding') || documents.length <= 1) {
        throw asIngestionError('indexing', error, !isDataException(error));
      }
      await indexOneByOne(runtime, collection, documents, outcomes, progress, holder);
    }
  } finally {
    // Before the worker writes the outcomes: a progress write after them would show a stage again.
    await batchProgress.finish();
  }
  return [...outcomes.values()];
}
