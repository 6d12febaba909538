import { createHash } from 'node:crypto';
import type { CollectionRecord, SearchMode } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';
import { unitVector } from '../vectors/unit-vector.js';

/** The longest query vector the schema takes: the largest `dimension` a collection may have. */
export const MAX_QUERY_EMBEDDING_LENGTH = 16000;

/**
 * A query's own vector (`embedding`), for collections whose vectors come from a model the service
 * does not run (raw vectors upserted by the client): searching them with the collection's
 * embedding of the query text would compare two models' spaces. Checked as an upserted vector
 * is, and scaled to length 1 as stored vectors are. The query routes accept numbers beyond a
 * double's range (they arrive as Infinity), so those are refused here by position.
 */
export function queryEmbedding(collection: CollectionRecord, mode: SearchMode, values: readonly number[]): Float32Array {
  if (mode === 'keyword') {
    throw new BadRequestError('embedding is searched in semantic and hybrid mode; keyword mode ranks by the query text alone (drop embedding or set search_mode)');
  }
  if (values.length !== collection.dimension) {
    throw new BadRequestError(`embedding has ${values.length} dimensions; collection ${collection.name} expects ${collection.dimension}`);
  }
  const infinite = values.findIndex((value) => !Number.isFinite(value));
  if (infinite !== -1) throw new BadRequestError(`embedding[${infinite}] is too large for a double`);
  const unit = unitVector(values);
  if (!unit) throw new BadRequestError('embedding is all zeros: cosine similarity is undefined for it');
  return unit;
}

/** What stands for the vector in a query's cache key: its unit vector's bytes hashed, not thousands of numbers as text. */
export function queryEmbeddingDigest(embedding: Float32Array): string {
  return createHash('sha256').update(new Uint8Array(embedding.buffer, embedding.byteOffset, embedding.byteLength)).digest('base64url');
}
