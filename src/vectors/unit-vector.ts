import type { CollectionRecord } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';

/** The most dimensions a collection's vectors may have (collections, presets, upserted and query vectors). */
export const MAX_EMBEDDING_DIMENSION = 16000;

/**
 * A raw vector scaled to length 1 as 32-bit floats, or null when it has no direction (all zeros).
 * Cosine similarity ignores length, so this changes no ranking; it keeps every stored value
 * within [-1, 1]. Stored as sent, values beyond float32's range (about ±3.4e38) became Infinity
 * and values below its smallest (about 1e-45) became 0, which made cosine NaN for the vector; a
 * store that squares values in 32-bit arithmetic overflows from about 1.8e19. The length is
 * taken after dividing by the largest magnitude, so that squaring cannot overflow or underflow
 * in double precision either.
 */
export function unitVector(values: readonly number[]): Float32Array | null {
  let largest = 0;
  for (const value of values) largest = Math.max(largest, Math.abs(value));
  if (largest === 0) return null;
  let sumOfSquares = 0;
  for (const value of values) sumOfSquares += (value / largest) ** 2;
  const length = Math.sqrt(sumOfSquares);
  return Float32Array.from(values, (value) => value / largest / length);
}

/**
 * `values` as a vector of `collection`, scaled to length 1: 400 naming `field` when its length is
 * not the collection's dimension, when a number is beyond a double (routes that accept such
 * numbers get Infinity), or when every value is zero. Upserted vectors and a query's own vector
 * are checked alike.
 */
export function collectionUnitVector(collection: CollectionRecord, values: readonly number[], field: string): Float32Array {
  if (values.length !== collection.dimension) {
    throw new BadRequestError(`${field} has ${values.length} dimensions; collection ${collection.name} expects ${collection.dimension}`);
  }
  const infinite = values.findIndex((value) => !Number.isFinite(value));
  if (infinite !== -1) throw new BadRequestError(`${field}[${infinite}] is too large for a double`);
  const unit = unitVector(values);
  if (!unit) throw new BadRequestError(`${field} is all zeros: cosine similarity is undefined for it`);
  return unit;
}
