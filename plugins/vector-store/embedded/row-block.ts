/**
 * A dense block of unit-length rows (cosine similarity is then a dot product) with each row's key
 * and metadata. The embedded store keeps one block per tenant, so a tenant's rows are scanned on
 * their own. The rows sit in fixed-size segments: a growing block allocates one more segment and
 * never copies its rows. It used to double one array: at 262,144 384-dim rows (a 200 MiB text
 * file has 344,124) the old 384 MiB array and the new 768 MiB one were held at once. A removal
 * moves the last row into the hole, keeping the block dense.
 */
import usearch, { type Matches } from 'usearch';
import type { TopKHits } from './top-k-hits.js';

/**
 * Below this many rows a JavaScript loop beats a call into usearch: on 2 cores the native call
 * costs a few microseconds, the loop ~0.4 µs a sequential 384-dim row.
 */
const simdScanMinimumRows = 64;
/**
 * 6 MiB of 384-dim rows: the most a growth allocates at once. An exact scan makes one SIMD call
 * per segment; at 20,000 384-dim rows (the largest tenant scanned exactly) 5 calls took as long as
 * one (p50 1.65 against 1.74 ms, 5,000 rows 0.38 against 0.36 ms, 300 scans each, 2 shared cores).
 */
export const defaultRowsPerSegment = 4_096;
/** A first segment starts this small and doubles up to a full one, so a small tenant stays small. */
const firstSegmentRows = 4;

interface Segment {
  matrix: Float32Array;
  keys: Float64Array;
  metadata: Array<Record<string, unknown>>;
}

export class RowBlock {
  private readonly segments: Segment[] = [];
  private rows = 0;

  constructor(readonly dimension: number, private readonly rowsPerSegment = defaultRowsPerSegment) {
    this.segments.push(this.newSegment(Math.min(firstSegmentRows, rowsPerSegment)));
  }

  get size(): number {
    return this.rows;
  }

  keyAt(slot: number): number {
    return this.segmentOf(slot).keys[slot % this.rowsPerSegment];
  }

  /** The slot's unit row (a view, not a copy). */
  rowAt(slot: number): Float32Array {
    const offset = (slot % this.rowsPerSegment) * this.dimension;
    return this.segmentOf(slot).matrix.subarray(offset, offset + this.dimension);
  }

  metadataAt(slot: number): Record<string, unknown> {
    return this.segmentOf(slot).metadata[slot % this.rowsPerSegment];
  }

  /** Appends a row (copied: `unitRow` must already be unit length) and returns its slot. */
  append(key: number, unitRow: Float32Array, metadata: Record<string, unknown>): number {
    const slot = this.rows;
    const segment = this.segmentWithRoomFor(slot);
    segment.keys[slot % this.rowsPerSegment] = key;
    this.rows++;
    this.replace(slot, unitRow, metadata);
    return slot;
  }

  replace(slot: number, unitRow: Float32Array, metadata: Record<string, unknown>): void {
    const segment = this.segmentOf(slot);
    const offset = slot % this.rowsPerSegment;
    segment.matrix.set(unitRow, offset * this.dimension);
    segment.metadata[offset] = metadata;
  }

  /** Removes a slot by moving the last row into it; returns the key that moved, if any did. */
  removeAt(slot: number): number | undefined {
    const last = --this.rows;
    const lastSegment = this.segmentOf(last);
    const lastOffset = last % this.rowsPerSegment;
    let movedKey: number | undefined;
    if (slot !== last) {
      movedKey = lastSegment.keys[lastOffset];
      const segment = this.segmentOf(slot);
      const offset = slot % this.rowsPerSegment;
      segment.matrix.set(lastSegment.matrix.subarray(lastOffset * this.dimension, (lastOffset + 1) * this.dimension), offset * this.dimension);
      segment.keys[offset] = movedKey;
      segment.metadata[offset] = lastSegment.metadata[lastOffset];
    }
    lastSegment.metadata.length = lastOffset;
    // Beyond the segment appends go into, one more is kept: rows added and removed around a
    // boundary then do not allocate and free a segment each time.
    if (this.segments.length > Math.floor(last / this.rowsPerSegment) + 2) this.segments.pop();
    return movedKey;
  }

  similarityAt(unitQuery: Float32Array, slot: number): number {
    return dotWithRow(unitQuery, this.segmentOf(slot).matrix, (slot % this.rowsPerSegment) * this.dimension);
  }

  /**
   * Offers every row (or those whose slot passes `allowedSlot`) to `best`. Without a predicate, a
   * segment of 64+ rows goes through usearch's SIMD exact search (~10x the JavaScript loop's speed
   * at 384 dimensions, bench/results/vector-stores.json) and only its winners are rescored here.
   */
  searchInto(unitQuery: Float32Array, best: TopKHits, allowedSlot?: (slot: number) => boolean): void {
    for (let first = 0, index = 0; first < this.rows; first += this.rowsPerSegment, index++) {
      const segment = this.segments[index];
      const rows = Math.min(this.rowsPerSegment, this.rows - first);
      if (!allowedSlot && rows >= simdScanMinimumRows) {
        const count = Math.min(best.capacity, rows);
        const matches = usearch.exactSearch(segment.matrix.subarray(0, rows * this.dimension), unitQuery, this.dimension, count, usearch.MetricKind.IP, 1) as Matches;
        for (const match of matches.keys) {
          const offset = Number(match);
          best.offer(segment.keys[offset], dotWithRow(unitQuery, segment.matrix, offset * this.dimension));
        }
        continue;
      }
      for (let offset = 0; offset < rows; offset++) {
        if (!allowedSlot || allowedSlot(first + offset)) best.offer(segment.keys[offset], dotWithRow(unitQuery, segment.matrix, offset * this.dimension));
      }
    }
  }

  private segmentOf(slot: number): Segment {
    return this.segments[Math.floor(slot / this.rowsPerSegment)];
  }

  /** The segment `slot` goes into: the first one doubles while it is not full size, later ones come whole. */
  private segmentWithRoomFor(slot: number): Segment {
    const index = Math.floor(slot / this.rowsPerSegment);
    if (index === this.segments.length) this.segments.push(this.newSegment(this.rowsPerSegment));
    const segment = this.segments[index];
    const offset = slot % this.rowsPerSegment;
    if (offset < segment.keys.length) return segment;
    const grown = this.newSegment(Math.min(segment.keys.length * 2, this.rowsPerSegment));
    grown.matrix.set(segment.matrix);
    grown.keys.set(segment.keys);
    grown.metadata = segment.metadata;
    this.segments[index] = grown;
    return grown;
  }

  private newSegment(rows: number): Segment {
    return { matrix: new Float32Array(rows * this.dimension), keys: new Float64Array(rows), metadata: [] };
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
