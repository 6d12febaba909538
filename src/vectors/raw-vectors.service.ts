import { Type, type Static } from 'typebox';
import type { CollectionRecord } from '../db/entities/index.js';
import { deleteChunksByKey, insertChunks, type StoredChunk } from '../documents/chunk-store.js';
import { checkMetadata } from '../documents/metadata-rules.js';
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js';
import type { CollectionDirectory } from '../collections/collection-directory.js';
import type { SqlRunner } from '../plugins.js';
import { removeEntriesOfDeletedRows, removeFromIndexes, type SearchIndexes } from '../search/search-indexes.js';
import { collectionUnitVector, MAX_EMBEDDING_DIMENSION } from './unit-vector.js';
import type { WriteLocks } from '../concurrency/keyed-serializer.js';

interface PreparedVector {
  id: string;
  embedding: Float32Array;
  text: string;
  metadata: Record<string, unknown>;
  tenant: string | null;
}

export const VectorUpsertBody = Type.Object({
  vectors: Type.Array(Type.Object({
    id: Type.String({ minLength: 1, maxLength: 255 }),
    embedding: Type.Array(Type.Number(), { minItems: 1, maxItems: MAX_EMBEDDING_DIMENSION }),
    text: Type.Optional(Type.String({ maxLength: 1_000_000 })),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }, { additionalProperties: false }), { minItems: 1, maxItems: 5000 }),
}, { additionalProperties: false });
export type VectorUpsertInput = Static<typeof VectorUpsertBody>;

export const VectorDeleteBody = Type.Object({
  ids: Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { minItems: 1, maxItems: 10000 }),
}, { additionalProperties: false });

export interface RawVectorRuntime {
  sql: SqlRunner;
  indexes: SearchIndexes;
  directory: CollectionDirectory;
  /** Upserts and deletes of one id run one at a time (see KeyedSerializer). */
  writeLocks: WriteLocks;
}

const idKeys = (collection: CollectionRecord, ids: Iterable<string>) => [...ids].map((id) => `vector:${collection.id}:${id}`);

/**
 * Raw vectors (custom embeddings) bypass ingestion: each becomes a chunk without a document,
 * searchable by its vector and, through its text, by BM25. Everything is validated before anything
 * is written, so a bad item rejects the whole request and nothing is half-written.
 */
export async function upsertRawVectors(runtime: RawVectorRuntime, collection: CollectionRecord, input: VectorUpsertInput): Promise<number> {
  const seen = new Set<string>();
  const prepared = input.vectors.map((vector, index) => {
    const embedding = collectionUnitVector(collection, vector.embedding, `vectors[${index}].embedding`);
    if (seen.has(vector.id)) throw new BadRequestError(`vectors[${index}].id "${vector.id}" appears twice in the request`);
    seen.add(vector.id);
    const metadata = vector.metadata ?? {};
    const tenant = checkMetadata(collection, metadata, `vectors[${index}].metadata`);
    return { id: vector.id, embedding, text: vector.text ?? '', metadata, tenant };
  });
  return runtime.writeLocks.run(idKeys(collection, seen), () => writeRawVectors(runtime, collection, prepared));
}

async function writeRawVectors(runtime: RawVectorRuntime, collection: CollectionRecord, prepared: PreparedVector[]): Promise<number> {
  const seen = prepared.map((vector) => vector.id);
  const existing = await chunksById(runtime.sql, collection, seen);
  const tenantById = new Map(prepared.map((vector) => [vector.id, vector.tenant]));
  refuseTakenIds(collection, existing, tenantById);
  let keys: Array<number | null> = [];
  try {
    keys = await insertChunks(runtime.sql, collection.id, prepared.map((vector) => ({
      id: vector.id, documentId: null, chunkIndex: 0, text: vector.text, metadata: vector.metadata, tenant: vector.tenant,
    })), { replaceOnlyOwnRawVectors: true });
    if (keys.includes(null)) await refuseUnwrittenIds(runtime.sql, collection, prepared.filter((_, index) => keys[index] === null).map((vector) => vector.id), tenantById);
    await runtime.indexes.keywordIndex.add(collection.id, prepared.map((vector, index) => ({ key: keys[index]!, text: vector.text, metadata: vector.metadata, tenant: vector.tenant })));
    await runtime.indexes.vectorStore.upsert(prepared.map((vector, index) => ({
      key: keys[index]!, collectionId: collection.id, documentId: null, embedding: vector.embedding, metadata: vector.metadata, tenant: vector.tenant,
    })));
    await removeEntriesOfDeletedRows(runtime.sql, runtime.indexes, collection.id, keys as number[], (id) => runtime.directory.recordWrite(runtime.sql, id));
  } catch (error) {
    await takeBackUpsert(runtime, collection, keys, existing);
    throw error;
  }
  await runtime.directory.recordWrite(runtime.sql, collection.id);
  return prepared.length;
}

async function chunksById(sql: SqlRunner, collection: CollectionRecord, ids: string[]): Promise<StoredChunk[]> {
  const rows = await sql<StoredChunk & { key: string | number }>(
    'select key, id, collection_id, document_id, chunk_index, text, metadata, tenant from chunks where collection_id = ? and id = any(?::text[])', [collection.id, ids],
  );
  return rows.map((row) => ({ ...row, key: Number(row.key) }));
}

/** Refuses ids that name a document's chunk or another tenant's vector (409). */
function refuseTakenIds(collection: CollectionRecord, rows: StoredChunk[], tenantById: Map<string, string | null>): void {
  // An id of a document's chunk is not a raw vector: replacing it would take the chunk from its document.
  const ofDocument = rows.find((row) => row.document_id !== null);
  if (ofDocument) throw new ConflictError(`id "${ofDocument.id}" names a chunk of a document in collection ${collection.name}; raw vectors cannot replace document chunks`);
  // Ids are unique per collection, not per tenant: replacing another tenant's vector would move it
  // into this tenant's results. Tenants compare as text, as the search indexes keep them apart (the
  // number 5 and the string "5" are one). The detail does not name the other tenant's value.
  const ofOtherTenant = rows.find((row) => row.tenant !== tenantById.get(row.id));
  if (ofOtherTenant) throw new ConflictError(`id "${ofOtherTenant.id}" names a vector of another tenant in collection ${collection.name}; ids are unique across the tenants of a collection`);
}

/**
 * Explains ids the write left alone (null keys): their collection was deleted meanwhile, or
 * another request took them after this one checked (insertChunks' replaceOnlyOwnRawVectors).
 */
async function refuseUnwrittenIds(sql: SqlRunner, collection: CollectionRecord, ids: string[], tenantById: Map<string, string | null>): Promise<never> {
  refuseTakenIds(collection, await chunksById(sql, collection, ids), tenantById);
  const [owner] = await sql('select 1 from collections where id = ?', [collection.id]);
  if (!owner) throw new NotFoundError(`Collection ${collection.name} was deleted while its vectors were written`);
  throw new ConflictError(`id "${ids[0]}" was changed by another request while this one was written; send it again`);
}

/**
 * After a failed upsert, takes back what it wrote: the ids it added are removed (rows and both
 * indexes), and the rows it was replacing get their text and metadata back. Their vectors are the
 * previous ones unless the store wrote part of the batch before failing; retrying the request
 * completes them. When this fails too (the database is away), the retry replaces everything.
 */
async function takeBackUpsert(runtime: RawVectorRuntime, collection: CollectionRecord, keys: Array<number | null>, previous: StoredChunk[]): Promise<void> {
  const written = new Set(keys.filter((key) => key !== null));
  const replaced = new Set(previous.map((row) => row.key));
  const added = [...written].filter((key) => !replaced.has(key));
  // Only rows this upsert wrote over: when its insert failed (one statement, so nothing of it was
  // written), putting the rows read before it back would bring back any a truncate had deleted since.
  const overwritten = previous.filter((row) => written.has(row.key));
  try {
    await removeFromIndexes(runtime.indexes, collection.id, added);
    await deleteChunksByKey(runtime.sql, added);
    const restored = await insertChunks(runtime.sql, collection.id, overwritten.map((row) => ({
      id: row.id, documentId: null, chunkIndex: row.chunk_index, text: row.text, metadata: row.metadata, tenant: row.tenant,
    })));
    // Not for a collection deleted meanwhile (null keys): its index is gone and must stay so.
    const back = overwritten.filter((_, index) => restored[index] !== null);
    await runtime.indexes.keywordIndex.add(collection.id, back.map((row) => ({ key: row.key, text: row.text, metadata: row.metadata, tenant: row.tenant })));
    await runtime.directory.recordWrite(runtime.sql, collection.id);
  } catch {
    // Left to the retry, as above; the failure being handled is the one to report.
  }
}

/** Deletes raw vectors by id; ids that do not exist (or name a document chunk) are not counted. */
export async function deleteRawVectors(runtime: RawVectorRuntime, collection: CollectionRecord, ids: string[]): Promise<number> {
  return runtime.writeLocks.run(idKeys(collection, ids), () => deleteStoredRawVectors(runtime, collection, ids));
}

async function deleteStoredRawVectors(runtime: RawVectorRuntime, collection: CollectionRecord, ids: string[]): Promise<number> {
  const rows = await runtime.sql<{ key: string | number }>('select key from chunks where collection_id = ? and document_id is null and id = any(?::text[])', [collection.id, ids]);
  const keys = rows.map((row) => Number(row.key));
  await removeFromIndexes(runtime.indexes, collection.id, keys);
  if (keys.length > 0) {
    await deleteChunksByKey(runtime.sql, keys);
    await runtime.directory.recordWrite(runtime.sql, collection.id);
  }
  return keys.length;
}
