/**
 * A dense block of unit-length rows (cosine similarity is then a dot product) with each row's key
 * and metadata. The embedded store keeps one block per tenant, so a tenant's rows sit in contiguous
 * memory: scanning them is sequential, and usearch's SIMD exact search can take them as they are.
 * A removal moves the last row into the hole, keeping the block dense.
 */
import usearch, { type Matches } from 'usearch';
import type { TopKHits } from './top-k-hits.js';

/**
 * Below this many rows a JavaScript loop beats a call into usearch: on 2 cores the native call
 * costs a few microseconds, the loop ~0.4 µs a sequential 384-dim row.
 */
const simdScanMinimumRows = 64;

export class RowBlock {
  private matrix: Float32Array;
  private keyOfSlot: Float64Array;
  private readonly metadataOfSlot: Array<Record<string, unknown>> = [];
  private rows = 0;

  constructor(readonly dimension: number) {
    this.matrix = new Float32Array(4 * dimension);
    this.keyOfSlot = new Float64Array(4);
  }

  get size(): number {
    return this.rows;
  }

  keyAt(slot: number): number {
    return this.keyOfSlot[slot];
  }

  /** The slot's unit row (a view, not a copy). */
  rowAt(slot: number): Float32Array {
    return this.matrix.subarray(slot * this.dimension, (slot + 1) * this.dimension);
  }

  metadataAt(slot: number): Record<string, unknown> {
    return this.metadataOfSlot[slot];
  }

  /** Appends a row (copied: `unitRow` must already be unit length) and returns its slot. */
  append(key: number, unitRow: Float32Array, metadata: Record<string, unknown>): number {
    if (this.rows === this.keyOfSlot.length) this.grow();
    const slot = this.rows++;
    this.keyOfSlot[slot] = key;
    this.replace(slot, unitRow, metadata);
    return slot;
  }

  replace(slot: number, unitRow: Float32Array, metadata: Record<string, unknown>): void {
    this.matrix.set(unitRow, slot * this.dimension);
    this.metadataOfSlot[slot] = metadata;
  }

  /** Removes a slot by moving the last row into it; returns the key that moved, if any did. */
  removeAt(slot: number): number | undefined {
    const last = --this.rows;
    let movedKey: number | undefined;
    if (slot !== last) {
      movedKey = this.keyOfSlot[last];
      this.matrix.copyWithin(slot * this.dimension, last * this.dimension, (last + 1) * this.dimension);
      this.keyOfSlot[slot] = movedKey;
      this.metadataOfSlot[slot] = this.metadataOfSlot[last];
    }
    this.metadataOfSlot.length = last;
    return movedKey;
  }

  similarityAt(unitQuery: Float32Array, slot: number): number {
    return dotWithRow(unitQuery, this.matrix, slot * this.dimension);
  }

  /**
   * Offers every row (or those whose slot passes `allowedSlot`) to `best`. Without a predicate, a
   * block of 64+ rows goes through usearch's SIMD exact search (~10x the JavaScript loop's speed
   * at 384 dimensions, bench/results/vector-stores.json) and only its winners are rescored here.
   */
  searchInto(unitQuery: Float32Array, best: TopKHits, allowedSlot?: (slot: number) => boolean): void {
    if (this.rows === 0) return;
    if (!allowedSlot && this.rows >= simdScanMinimumRows) {
      const rows = this.matrix.subarray(0, this.rows * this.dimension);
      const count = Math.min(best.capacity, this.rows);
      const matches = usearch.exactSearch(rows, unitQuery, this.dimension, count, usearch.MetricKind.IP, 1) as Matches;
      for (const slot of matches.keys) best.offer(this.keyOfSlot[Number(slot)], this.similarityAt(unitQuery, Number(slot)));
      return;
    }
    for (let slot = 0; slot < this.rows; slot++) {
      if (!allowedSlot || allowedSlot(slot)) best.offer(this.keyOfSlot[slot], this.similarityAt(unitQuery, slot));
    }
  }

  /** Doubles the capacity: n appends cost O(n) copies in total, and a small tenant stays small. */
  private grow(): void {
    const capacity = this.keyOfSlot.length * 2;
    const matrix = new Float32Array(capacity * this.dimension);
    matrix.set(this.matrix);
    const keyOfSlot = new Float64Array(capacity);
    keyOfSlot.set(this.keyOfSlot);
    this.matrix = matrix;
    this.keyOfSlot = keyOfSlot;
  }
}

/** Writes `source / |source|` into `target`; a zero vector stays zero (similarity 0 to everything). */
export function copyNormalised(source: Float32Array, target: Float32Array): void {
  let squares = 0;
  for (let i = 0; i < source.length; i++) squares += source[i] * source[i];
  const scale = squares > 0 ? 1 / Math.sqrt(squares) : 0;
  for (let i = 0; i < source.length; i++) target[i] = source[i] * scale;
}

export function normalised(vector: Float32Array): Float32Array {
  const unit = new Float32Array(vector.length);
  copyNormalised(vector, unit);
  return unit;
}

/** Accumulates in doubles, so every search path reports the same score for a row. */
function dotWithRow(query: Float32Array, matrix: Float32Array, offset: number): number {
  const length = query.length;
  let sum0 = 0;
  let sum1 = 0;
  let sum2 = 0;
  let sum3 = 0;
  let i = 0;
  for (; i + 3 < length; i += 4) {
    sum0 += query[i] * matrix[offset + i];
    sum1 += query[i + 1] * matrix[offset + i + 1];
    sum2 += query[i + 2] * matrix[offset + i + 2];
    sum3 += query[i + 3] * matrix[offset + i + 3];
  }
  for (; i < length; i++) sum0 += query[i] * matrix[offset + i];
  return sum0 + sum1 + sum2 + sum3;
}
