import { chunkElements } from '../chunking/chunk-elements.js';
import type { CollectionRecord, DocumentProgress } from '../db/entities/index.js';
import { chunkKeysOfDocument, deleteChunksByKey, insertChunks } from '../documents/chunk-store.js';
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

/** Chunks embedded per provider call. */
const EMBED_BATCH = 64;
/** Progress is written at most this often: each write is a statement on PGlite's one connection. */
const PROGRESS_INTERVAL_MS = 250;

async function setProgress(sql: SqlRunner, documentId: string, progress: DocumentProgress): Promise<void> {
  await sql(`update documents set status = 'processing', progress = ?::jsonb, updated_at = now() where id = ?`, [JSON.stringify(progress), documentId]);
}

async function runStage<T>(stage: string, work: () => Promise<T>, retryable = false): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof IngestionError) throw error;
    throw new IngestionError(stage, error instanceof Error ? error.message : String(error), retryable);
  }
}

async function saveElements(sql: SqlRunner, documentId: string, elements: DocumentElement[]): Promise<void> {
  await sql('delete from document_elements where document_id = ?', [documentId]);
  for (let start = 0; start < elements.length; start += 1000) {
    const batch = elements.slice(start, start + 1000).map((element, offset) => ({
      element_index: start + offset, type: element.type, text: element.text, heading_path: element.headingPath,
      page: element.page ?? null, metadata: { ...(element.metadata ?? {}), ...(element.level ? { level: element.level } : {}) },
    }));
    await sql(
      `insert into document_elements (id, document_id, element_index, type, text, heading_path, page, metadata)
       select gen_random_uuid(), ?::uuid, r.element_index, r.type, r.text, r.heading_path, r.page, r.metadata
       from jsonb_to_recordset(?::jsonb) as r(element_index int, type text, text text, heading_path jsonb, page int, metadata jsonb)`,
      [documentId, JSON.stringify(batch)],
    );
  }
}

/**
 * Parses, chunks, embeds and indexes one document. Re-running it is safe: the document's previous
 * chunks and index entries are replaced, so a job retried after a crash finishes the work.
 */
export async function ingestDocument(runtime: IngestionRuntime, documentId: string): Promise<'ready' | 'gone'> {
  const { sql } = runtime;
  const [document] = await sql<DocumentRow>(
    'select id, collection_id, filename, content_type, storage_key, metadata, tenant from documents where id = ?', [documentId],
  );
  if (!document) return 'gone';
  const collection = await runtime.loadCollection(document.collection_id);
  if (!collection) return 'gone';

  let lastProgressAt = 0;
  const progress = async (stage: string, percent: number, message: string, force = false) => {
    const now = Date.now();
    if (!force && now - lastProgressAt < PROGRESS_INTERVAL_MS) return;
    lastProgressAt = now;
    await setProgress(sql, documentId, { stage, percent: Math.round(percent), message });
  };

  await progress('parsing', 5, `parsing ${document.filename}`, true);
  const parsed = await runStage('parsing', async () => {
    if (!document.storage_key) throw new Error('the original file is missing');
    const data = await runtime.files.read(document.storage_key);
    const choice = selectParser(runtime.parsers, document.filename, document.content_type);
    if (!choice) throw new Error(`no parser reads ${document.content_type}`);
    return choice.parser.parse({ filename: document.filename, contentType: document.content_type, data });
  });
  await runStage('parsing', () => saveElements(sql, documentId, parsed.elements), true);

  await progress('chunking', 20, `chunking ${parsed.elements.length} elements`, true);
  const chunks = await runStage('chunking', async () => chunkElements(parsed.elements, {
    chunkSize: collection.chunkSize, chunkOverlap: collection.chunkOverlap, strategy: collection.chunkStrategy,
  }));

  const model = runtime.embeddingModelFor(collection);
  const vectors: number[][] = [];
  for (let start = 0; start < chunks.length; start += EMBED_BATCH) {
    await progress('embedding', 25 + (60 * start) / Math.max(chunks.length, 1), `embedding chunks ${start + 1}-${Math.min(start + EMBED_BATCH, chunks.length)} of ${chunks.length}`);
    const batch = chunks.slice(start, start + EMBED_BATCH).map((chunk) => chunk.text);
    const result = await runStage('embedding', () => model.embed(batch, 'document'), true);
    if (result.vectors.length !== batch.length || result.vectors.some((vector) => vector.length !== collection.dimension)) {
      throw new IngestionError('embedding', `the model returned vectors that do not match the collection dimension ${collection.dimension}`, false);
    }
    vectors.push(...result.vectors);
  }

  await progress('indexing', 90, `indexing ${chunks.length} chunks`, true);
  await runStage('indexing', async () => {
    const previousKeys = await chunkKeysOfDocument(sql, documentId);
    if (previousKeys.length > 0) {
      await runtime.keywordIndex.remove(collection.id, previousKeys);
      await runtime.vectorStore.delete(collection.id, previousKeys);
      await deleteChunksByKey(sql, previousKeys);
    }
    const rows = chunks.map((chunk) => ({
      id: `${documentId}:${chunk.index}`,
      documentId,
      chunkIndex: chunk.index,
      text: chunk.text,
      // Upload metadata on every chunk, so callers always find and can filter on what they sent.
      metadata: { ...document.metadata, heading_path: chunk.headingPath, ...(chunk.page !== undefined ? { page: chunk.page } : {}) },
      tenant: document.tenant,
    }));
    const keys = await insertChunks(sql, collection.id, rows);
    await runtime.keywordIndex.add(collection.id, rows.map((row, index) => ({ key: keys[index]!, text: row.text, metadata: row.metadata, tenant: row.tenant })));
    await runtime.vectorStore.upsert(rows.map((row, index) => ({
      key: keys[index]!, collectionId: collection.id, documentId, embedding: Float32Array.from(vectors[index]!), metadata: row.metadata, tenant: row.tenant,
    })));
  }, true);

  await sql(
    `update documents set status = 'ready', progress = ?::jsonb, error = null, chunk_count = ?, title = coalesce(?, title),
       processed_at = now(), updated_at = now() where id = ?`,
    [JSON.stringify({ stage: 'done', percent: 100, message: `${chunks.length} chunks indexed` }), chunks.length, parsed.title ?? null, documentId],
  );
  await sql('update collections set write_version = write_version + 1 where id = ?', [collection.id]);
  return 'ready';
}
