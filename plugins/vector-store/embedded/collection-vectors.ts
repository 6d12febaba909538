/**
 * One collection's vectors in memory: a dense matrix of unit-length rows (cosine similarity is then
 * a dot product), the metadata and tenant of every row, a key list per tenant, and a usearch HNSW
 * graph over the same rows for approximate search. Rows stay dense (a removal moves the last row
 * into the hole) so an exact scan walks contiguous memory.
 */
import usearch, { type Index as UsearchIndex } from 'usearch';
import type { VectorHit } from '../../../src/plugins.js';
import { TopKHits } from './top-k-hits.js';

/** HNSW settings; bench/search/vector-stores.ts measures them (bench/results/vector-stores.json). */
export interface AnnSettings {
  /** Graph degree M. 16 is hnswlib's and pgvector's default; 32 added memory, not recall, at 100k. */
  connectivity: number;
  /** Candidate list while inserting (pgvector's ef_construction default is 64; 128 buys recall). */
  expansionAdd: number;
  /** Candidate list while searching: 64 gave recall@10 0.92 at 100k 384-dim vectors (STACK.md). */
  expansionSearch: number;
}

export const defaultAnnSettings: AnnSettings = { connectivity: 16, expansionAdd: 128, expansionSearch: 64 };

/** A row to store: the embedding is copied and normalised, the caller's array is left alone. */
export interface StoredVector {
  key: number;
  embedding: Float32Array;
  metadata: Record<string, unknown>;
  tenant: string | null;
}

/** Spawning usearch's worker threads costs more than it saves for a handful of rows. */
const parallelAddMinimumRows = 256;
const initialCapacityRows = 1024;

export class CollectionVectors {
  private matrix: Float32Array;
  private keyOfSlot: Float64Array;
  private readonly slotOfKey = new Map<number, number>();
  private metadataOfSlot: Array<Record<string, unknown>> = [];
  private tenantOfSlot: Array<string | null> = [];
  private readonly keysOfTenant = new Map<string, Set<number>>();
  private annIndex: UsearchIndex;

  constructor(
    readonly dimension: number,
    private readonly ann: AnnSettings = defaultAnnSettings,
  ) {
    this.matrix = new Float32Array(initialCapacityRows * dimension);
    this.keyOfSlot = new Float64Array(initialCapacityRows);
    this.annIndex = this.newAnnIndex();
  }

  get size(): number {
    return this.slotOfKey.size;
  }

  has(key: number): boolean {
    return this.slotOfKey.has(key);
  }

  metadataOf(key: number): Record<string, unknown> | undefined {
    const slot = this.slotOfKey.get(key);
    return slot === undefined ? undefined : this.metadataOfSlot[slot];
  }

  metadataAtSlot(slot: number): Record<string, unknown> {
    return this.metadataOfSlot[slot];
  }

  tenantOf(key: number): string | null | undefined {
    const slot = this.slotOfKey.get(key);
    return slot === undefined ? undefined : this.tenantOfSlot[slot];
  }

  /** The keys of one tenant, kept up to date so a tenant restriction costs O(tenant size). */
  keysOf(tenant: string): ReadonlySet<number> {
    return this.keysOfTenant.get(tenant) ?? emptyKeys;
  }

  /** Every key, in slot order. */
  *keys(): IterableIterator<number> {
    for (let slot = 0; slot < this.size; slot++) yield this.keyOfSlot[slot];
  }

  /** Inserts or replaces rows; within one call the last row of a key wins. */
  upsert(vectors: StoredVector[]): void {
    const lastOfKey = new Map<number, StoredVector>();
    for (const vector of vectors) lastOfKey.set(vector.key, vector);
    const replaced = [...lastOfKey.keys()].filter((key) => this.slotOfKey.has(key));
    if (replaced.length > 0) this.annIndex.remove(BigUint64Array.from(replaced, BigInt));

    this.reserve(this.size + lastOfKey.size);
    const annKeys = new BigUint64Array(lastOfKey.size);
    const annRows = new Float32Array(lastOfKey.size * this.dimension);
    let row = 0;
    for (const vector of lastOfKey.values()) {
      const slot = this.slotFor(vector.key);
      const target = this.matrix.subarray(slot * this.dimension, (slot + 1) * this.dimension);
      copyNormalised(vector.embedding, target);
      annRows.set(target, row * this.dimension);
      annKeys[row] = BigInt(vector.key);
      this.metadataOfSlot[slot] = vector.metadata;
      this.setTenant(vector.key, slot, vector.tenant);
      row++;
    }
    this.annIndex.add(annKeys, annRows, lastOfKey.size >= parallelAddMinimumRows ? 0 : 1);
  }

  /** Removes the keys present; unknown keys are ignored. */
  remove(keys: number[]): void {
    const present = [...new Set(keys)].filter((key) => this.slotOfKey.has(key));
    if (present.length === 0) return;
    this.annIndex.remove(BigUint64Array.from(present, BigInt));
    for (const key of present) this.removeSlotOf(key);
  }

  /** Cosine similarity of a unit-length query with a stored key's row. */
  similarity(unitQuery: Float32Array, key: number): number {
    const slot = this.slotOfKey.get(key);
    return slot === undefined ? Number.NEGATIVE_INFINITY : dotWithRow(unitQuery, this.matrix, slot * this.dimension);
  }

  /** Exact top-k over every row. */
  exactSearchAll(unitQuery: Float32Array, topK: number): VectorHit[] {
    const best = new TopKHits(topK);
    for (let slot = 0; slot < this.size; slot++) {
      best.offer(this.keyOfSlot[slot], dotWithRow(unitQuery, this.matrix, slot * this.dimension));
    }
    return best.bestFirst();
  }

  /** Exact top-k over the given keys (keys not stored are skipped). */
  exactSearchKeys(unitQuery: Float32Array, keys: Iterable<number>, topK: number): VectorHit[] {
    const best = new TopKHits(topK);
    for (const key of keys) {
      const slot = this.slotOfKey.get(key);
      if (slot !== undefined) best.offer(key, dotWithRow(unitQuery, this.matrix, slot * this.dimension));
    }
    return best.bestFirst();
  }

  /**
   * The HNSW graph's `count` nearest keys, best first. Scores are recomputed from the matrix, so
   * they are exact cosine similarities whatever the index's arithmetic.
   */
  approximateNearestKeys(unitQuery: Float32Array, count: number): number[] {
    if (this.size === 0) return [];
    // One query runs on the calling thread: a worker hand-off costs more than the 0.2 ms search.
    const matches = this.annIndex.search(unitQuery, Math.min(count, this.size), 1);
    return Array.from(matches.keys, Number);
  }

  private newAnnIndex(): UsearchIndex {
    return new usearch.Index({
      dimensions: this.dimension,
      metric: usearch.MetricKind.Cos,
      quantization: usearch.ScalarKind.F32,
      connectivity: this.ann.connectivity,
      expansion_add: this.ann.expansionAdd,
      expansion_search: this.ann.expansionSearch,
      multi: false,
    });
  }

  private slotFor(key: number): number {
    const existing = this.slotOfKey.get(key);
    if (existing !== undefined) return existing;
    const slot = this.size;
    this.slotOfKey.set(key, slot);
    this.keyOfSlot[slot] = key;
    this.tenantOfSlot[slot] = null;
    return slot;
  }

  private setTenant(key: number, slot: number, tenant: string | null): void {
    const previous = this.tenantOfSlot[slot];
    if (previous !== null && previous !== tenant) this.keysOfTenant.get(previous)?.delete(key);
    this.tenantOfSlot[slot] = tenant;
    if (tenant === null) return;
    let keys = this.keysOfTenant.get(tenant);
    if (!keys) this.keysOfTenant.set(tenant, (keys = new Set()));
    keys.add(key);
  }

  private removeSlotOf(key: number): void {
    const slot = this.slotOfKey.get(key)!;
    const tenant = this.tenantOfSlot[slot];
    if (tenant !== null) {
      const keys = this.keysOfTenant.get(tenant)!;
      keys.delete(key);
      if (keys.size === 0) this.keysOfTenant.delete(tenant);
    }
    const lastSlot = this.size - 1;
    if (slot !== lastSlot) {
      const lastKey = this.keyOfSlot[lastSlot];
      this.matrix.copyWithin(slot * this.dimension, lastSlot * this.dimension, (lastSlot + 1) * this.dimension);
      this.keyOfSlot[slot] = lastKey;
      this.metadataOfSlot[slot] = this.metadataOfSlot[lastSlot];
      this.tenantOfSlot[slot] = this.tenantOfSlot[lastSlot];
      this.slotOfKey.set(lastKey, slot);
    }
    this.slotOfKey.delete(key);
    this.metadataOfSlot.length = lastSlot;
    this.tenantOfSlot.length = lastSlot;
  }

  /** Grows the matrix geometrically (x1.5) so n inserts cost O(n) copies in total. */
  private reserve(rows: number): void {
    if (rows <= this.keyOfSlot.length) return;
    const capacity = Math.max(rows, Math.ceil(this.keyOfSlot.length * 1.5));
    const matrix = new Float32Array(capacity * this.dimension);
    matrix.set(this.matrix.subarray(0, this.size * this.dimension));
    const keyOfSlot = new Float64Array(capacity);
    keyOfSlot.set(this.keyOfSlot.subarray(0, this.size));
    this.matrix = matrix;
    this.keyOfSlot = keyOfSlot;
  }
}

const emptyKeys: ReadonlySet<number> = new Set();

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

/** Four accumulators let V8 overlap the multiply-adds: 1.6x faster than one at 384 dimensions. */
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
