import { chunkElements, type ElementChunk } from '../chunking/chunk-elements.js';
import type { CollectionRecord, DocumentProgress } from '../db/entities/index.js';
import { deleteChunksByKey, insertChunks } from '../documents/chunk-store.js';
import type { DocumentElement, EmbeddingModel, Parser, SqlRunner, VectorStore } from '../plugins.js';
import type { KeywordIndex } from '../search/keyword/keyword-index.js';
import type { FileStore } from '../storage/file-store.js';
import { selectParser } from './parser-selection.js';

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
}

/** A failure that names the stage it happened in; `retryable` failures are worth another attempt. */
export class IngestionError extends Error {
  constructor(readonly stage: string, message: string, readonly retryable: boolean) {
    super(message);
  }
}

interface DocumentRow {
  id: string;
  collection_id: string;
  filename: string;
  content_type: string;
  storage_key: string | null;
  metadata: Record<string, unknown>;
  tenant: string | null;
}

interface PreparedDocument {
  row: DocumentRow;
  title: string | undefined;
  elements: DocumentElement[];
  chunks: ElementChunk[];
  vectors: number[][];
}

export interface DocumentOutcome {
  documentId: string;
  /** `gone`: deleted while queued. `failed`: this document cannot be ingested (the others go on). */
  status: 'ready' | 'failed' | 'gone';
  error?: IngestionError;
}

/** Chunks embedded per provider call. */
const EMBED_BATCH = 64;
/** Progress is written at most this often: each write is a statement on PGlite's one connection (~1 ms). */
const PROGRESS_INTERVAL_MS = 250;

/**
 * A short reason for the document's `error`: database errors from the driver start with the whole
 * statement (every chunk text of a batch), which is noise to a reader and may be megabytes.
 */
function conciseMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const afterStatement = /^\s*(?:insert|update|delete|select|with)\b[\s\S]* - ([^\n]+)$/i.exec(message)?.[1] ?? message;
  return afterStatement.length > 500 ? `${afterStatement.slice(0, 500)}...` : afterStatement;
}

function asIngestionError(stage: string, error: unknown, retryable: boolean): IngestionError {
  if (error instanceof IngestionError) return error;
  return new IngestionError(stage, conciseMessage(error), retryable);
}

async function writeProgress(sql: SqlRunner, updates: Array<{ id: string; progress: DocumentProgress }>): Promise<void> {
  if (updates.length === 0) return;
  await sql(
    `update documents d set status = 'processing', progress = u.progress, updated_at = now()
     from jsonb_to_recordset(?::jsonb) as u(id uuid, progress jsonb) where d.id = u.id`,
    [JSON.stringify(updates)],
  );
}

/** Parses and chunks one document; failures here are the document's own (bad file), never retried. */
async function parseAndChunk(runtime: IngestionRuntime, collection: CollectionRecord, row: DocumentRow): Promise<Omit<PreparedDocument, 'vectors'>> {
  let parsed;
  try {
    if (!row.storage_key) throw new Error('the original file is missing');
    // The storage error would name a server path; the client only needs to know the file is gone.
    const data = await runtime.files.read(row.storage_key).catch(() => {
      throw new Error('the original file is missing or unreadable');
    });
    const choice = selectParser(runtime.parsers, row.filename, row.content_type);
    if (!choice) throw new Error(`no parser reads ${row.content_type}`);
    parsed = await choice.parser.parse({ filename: row.filename, contentType: row.content_type, data });
  } catch (error) {
    throw asIngestionError('parsing', error, false);
  }
  let chunks: ElementChunk[];
  try {
    chunks = chunkElements(parsed.elements, { chunkSize: collection.chunkSize, chunkOverlap: collection.chunkOverlap, strategy: collection.chunkStrategy });
  } catch (error) {
    throw asIngestionError('chunking', error, false);
  }
  return { row, title: parsed.title, elements: parsed.elements, chunks };
}

function elementRows(documents: PreparedDocument[]) {
  return documents.flatMap((document) => document.elements.map((element, index) => ({
    document_id: document.row.id, element_index: index, type: element.type, text: element.text, heading_path: element.headingPath,
    page: element.page ?? null, metadata: { ...(element.metadata ?? {}), ...(element.level ? { level: element.level } : {}) },
  })));
}

/** Writes the prepared documents: elements, chunks, both indexes, and their `ready` state. */
async function indexDocuments(runtime: IngestionRuntime, collection: CollectionRecord, documents: PreparedDocument[]): Promise<void> {
  const { sql } = runtime;
  const ids = documents.map((document) => document.row.id);
  // A retried job replaces what an interrupted run left behind.
  const previous = await sql<{ key: string | number }>('select key from chunks where document_id = any(?::uuid[])', [ids]);
  const previousKeys = previous.map((row) => Number(row.key));
  if (previousKeys.length > 0) {
    await runtime.keywordIndex.remove(collection.id, previousKeys);
    await runtime.vectorStore.delete(collection.id, previousKeys);
    await deleteChunksByKey(sql, previousKeys);
  }
  await sql('delete from document_elements where document_id = any(?::uuid[])', [ids]);
  const elements = elementRows(documents);
  for (let start = 0; start < elements.length; start += 2000) {
    await sql(
      `insert into document_elements (id, document_id, element_index, type, text, heading_path, page, metadata)
       select gen_random_uuid(), r.document_id, r.element_index, r.type, r.text, r.heading_path, r.page, r.metadata
       from jsonb_to_recordset(?::jsonb) as r(document_id uuid, element_index int, type text, text text, heading_path jsonb, page int, metadata jsonb)`,
      [JSON.stringify(elements.slice(start, start + 2000))],
    );
  }

  const rows = documents.flatMap((document) => document.chunks.map((chunk, index) => ({
    id: `${document.row.id}:${chunk.index}`,
    documentId: document.row.id,
    chunkIndex: chunk.index,
    text: chunk.text,
    // Upload metadata on every chunk, so callers always find and can filter on what they sent.
    metadata: { ...document.row.metadata, heading_path: chunk.headingPath, ...(chunk.page !== undefined ? { page: chunk.page } : {}) },
    tenant: document.row.tenant,
    embedding: document.vectors[index]!,
  })));
  const keys = await insertChunks(sql, collection.id, rows);
  await runtime.keywordIndex.add(collection.id, rows.map((row, index) => ({ key: keys[index]!, text: row.text, metadata: row.metadata, tenant: row.tenant })));
  await runtime.vectorStore.upsert(rows.map((row, index) => ({
    key: keys[index]!, collectionId: collection.id, documentId: row.documentId, embedding: Float32Array.from(row.embedding), metadata: row.metadata, tenant: row.tenant,
  })));

  await sql(
    `update documents d set status = 'ready', error = null, chunk_count = u.chunk_count, title = coalesce(u.title, d.title),
       progress = jsonb_build_object('stage', 'done', 'percent', 100, 'message', u.chunk_count || ' chunks indexed'),
       processed_at = now(), updated_at = now()
     from jsonb_to_recordset(?::jsonb) as u(id uuid, chunk_count int, title text) where d.id = u.id`,
    [JSON.stringify(documents.map((document) => ({ id: document.row.id, chunk_count: document.chunks.length, title: document.title ?? null })))],
  );
  await runtime.recordWrite(collection.id);
}

/**
 * After a failed batch write, finds the documents that cannot be written by writing each alone:
 * those fail (the others end ready). When none can be written the cause is not a document (the
 * database is away), so the whole batch is retried.
 */
async function indexOneByOne(runtime: IngestionRuntime, collection: CollectionRecord, documents: PreparedDocument[], outcomes: Map<string, DocumentOutcome>): Promise<void> {
  const failures: Array<[PreparedDocument, unknown]> = [];
  for (const document of documents) {
    try {
      await indexDocuments(runtime, collection, [document]);
      outcomes.set(document.row.id, { documentId: document.row.id, status: 'ready' });
    } catch (error) {
      failures.push([document, error]);
    }
  }
  if (failures.length === documents.length) throw asIngestionError('indexing', failures[0]![1], true);
  for (const [document, error] of failures) {
    outcomes.set(document.row.id, { documentId: document.row.id, status: 'failed', error: asIngestionError('indexing', error, false) });
  }
}

/**
 * Parses, chunks, embeds and indexes a batch of documents of one collection. Writes go out in
 * bulk statements: a statement costs ~1 ms on PGlite whatever its size, so one document at a time
 * tops out near 30 documents/s there. A document whose file cannot be read fails alone; a failure
 * while embedding or writing fails the batch with a retryable error. Re-running is safe: previous
 * chunks and index entries of the documents are replaced.
 */
export async function ingestDocuments(runtime: IngestionRuntime, collectionId: string, documentIds: string[]): Promise<DocumentOutcome[]> {
  const { sql } = runtime;
  const outcomes = new Map<string, DocumentOutcome>(documentIds.map((id) => [id, { documentId: id, status: 'gone' }]));
  const collection = await runtime.loadCollection(collectionId);
  if (!collection) return [...outcomes.values()];
  const rows = await sql<DocumentRow>(
    'select id, collection_id, filename, content_type, storage_key, metadata, tenant from documents where id = any(?::uuid[]) and collection_id = ?',
    [documentIds, collectionId],
  );
  if (rows.length === 0) return [...outcomes.values()];

  let lastProgressAt = Date.now();
  const progress = async (stage: string, percentOf: (row: DocumentRow) => number, message: (row: DocumentRow) => string, force = false) => {
    if (!force && Date.now() - lastProgressAt < PROGRESS_INTERVAL_MS) return;
    lastProgressAt = Date.now();
    await writeProgress(sql, rows.filter((row) => outcomes.get(row.id)!.status !== 'failed')
      .map((row) => ({ id: row.id, progress: { stage, percent: Math.round(percentOf(row)), message: message(row) } })));
  };
  await progress('parsing', () => 5, (row) => `parsing ${row.filename}`, true);

  const prepared: Array<Omit<PreparedDocument, 'vectors'>> = [];
  for (const row of rows) {
    try {
      prepared.push(await parseAndChunk(runtime, collection, row));
    } catch (error) {
      outcomes.set(row.id, { documentId: row.id, status: 'failed', error: asIngestionError('parsing', error, false) });
    }
  }

  const model = runtime.embeddingModelFor(collection);
  const texts = prepared.flatMap((document) => document.chunks.map((chunk) => chunk.text));
  const vectors: number[][] = [];
  for (let start = 0; start < texts.length; start += EMBED_BATCH) {
    await progress('embedding', () => 25 + (60 * start) / Math.max(texts.length, 1), () => `embedding chunks ${start + 1}-${Math.min(start + EMBED_BATCH, texts.length)} of ${texts.length}`);
    const batch = texts.slice(start, start + EMBED_BATCH);
    let result;
    try {
      result = await model.embed(batch, 'document');
    } catch (error) {
      throw asIngestionError('embedding', error, true);
    }
    if (result.vectors.length !== batch.length || result.vectors.some((vector) => vector.length !== collection.dimension)) {
      throw new IngestionError('embedding', `the model returned vectors that do not match the collection dimension ${collection.dimension}`, false);
    }
    vectors.push(...result.vectors);
  }

  let offset = 0;
  const documents: PreparedDocument[] = prepared.map((document) => {
    const own = vectors.slice(offset, offset + document.chunks.length);
    offset += document.chunks.length;
    return { ...document, vectors: own };
  });
  await progress('indexing', () => 90, () => `indexing ${texts.length} chunks`, true);
  try {
    await indexDocuments(runtime, collection, documents);
    for (const document of documents) outcomes.set(document.row.id, { documentId: document.row.id, status: 'ready' });
  } catch (error) {
    if (documents.length <= 1) throw asIngestionError('indexing', error, true);
    await indexOneByOne(runtime, collection, documents, outcomes);
  }
  return [...outcomes.values()];
}
