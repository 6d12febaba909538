import { createHash } from 'node:crypto';
import type { CollectionRecord, SearchMode } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';
import { collectionUnitVector } from '../vectors/unit-vector.js';

/**
 * A query's own vector (`embedding`), for collections whose vectors come from a model the service
 * does not run (raw vectors upserted by the client): searching them with the collection's
 * embedding of the query text would compare two models' spaces. Checked and scaled as an upserted
 * vector is.
 */
export function queryEmbedding(collection: CollectionRecord, mode: SearchMode, values: readonly number[]): Float32Array {
  if (mode === 'keyword') {
    throw new BadRequestError('embedding is searched in semantic and hybrid mode; keyword mode ranks by the query text alone (drop embedding or set search_mode)');
  }
  return collectionUnitVector(collection, values, 'embedding');
}

/** What stands for the vector in a query's cache key: its unit vector's bytes hashed, not thousands of numbers as text. */
export function queryEmbeddingDigest(embedding: Float32Array): string {
  return createHash('sha256').update(new Uint8Array(embedding.buffer, embedding.byteOffset, embedding.byteLength)).digest('base64url');
}
