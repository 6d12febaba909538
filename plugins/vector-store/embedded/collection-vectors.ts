/**
 * One collection's vectors in memory: a `RowBlock` per tenant (rows of one tenant contiguous, so a
 * tenant restriction scans only that tenant's rows, sequentially), the location of every key, and
 * a usearch HNSW graph over all rows for approximate search.
 */
import { createHash } from 'node:crypto';
import usearch, { type Index as UsearchIndex } from 'usearch';
import type { VectorHit } from '../../../src/plugins.js';
import { copyNormalised, RowBlock } from './row-block.js';
import { TopKHits } from './top-k-hits.js';

/** HNSW settings; bench/search/vector-stores.ts measures them (bench/results/vector-stores.json). */
export interface AnnSettings {
  /** Graph degree M: 16 is hnswlib's, usearch's and pgvector's default. */
  connectivity: number;
  /** Candidate list while inserting: the main cost of an insert. */
  expansionAdd: number;
  /** Candidate list while searching. */
  expansionSearch: number;
  /** How the graph stores its copy of the vectors; scores always come from the f32 rows. */
  quantization: 'f32' | 'f16';
}

/**
 * At 100k clustered 384-dim vectors (bench/results/vector-stores.json): expansion_add 64 inserts
 * ~2x faster than 128 for ~0.02 less recall@10, and f16 halves the graph's copy of the vectors at
 * no measurable recall cost (results are rescored from the f32 rows).
 */
export const defaultAnnSettings: AnnSettings = { connectivity: 16, expansionAdd: 64, expansionSearch: 64, quantization: 'f16' };

/** A row to store: the embedding is copied and normalised, the caller's array is left alone. */
export interface StoredVector {
  key: number;
  embedding: Float32Array;
  metadata: Record<string, unknown>;
  tenant: string | null;
}

interface Location {
  block: RowBlock;
  slot: number;
  tenant: string | null;
}

/** Spawning usearch's worker threads costs more than it saves for a handful of rows. */
const parallelAddMinimumRows = 256;

export class CollectionVectors {
  private readonly blockOfTenant = new Map<string | null, RowBlock>();
  private readonly locationOfKey = new Map<number, Location>();
  private annIndex: UsearchIndex;

  constructor(
    readonly dimension: number,
    private readonly ann: AnnSettings = defaultAnnSettings,
  ) {
    this.annIndex = this.emptyGraph();
  }

  private emptyGraph(): UsearchIndex {
    const ann = this.ann;
    return new usearch.Index({
      dimensions: this.dimension,
      metric: usearch.MetricKind.Cos,
      quantization: ann.quantization === 'f16' ? usearch.ScalarKind.F16 : usearch.ScalarKind.F32,
      connectivity: ann.connectivity,
      expansion_add: ann.expansionAdd,
      expansion_search: ann.expansionSearch,
      multi: false,
    });
  }

  get size(): number {
    return this.locationOfKey.size;
  }

  tenantSize(tenant: string | null): number {
    return this.blockOfTenant.get(tenant)?.size ?? 0;
  }

  metadataOf(key: number): Record<string, unknown> | undefined {
    const location = this.locationOfKey.get(key);
    return location?.block.metadataAt(location.slot);
  }

  tenantOf(key: number): string | null | undefined {
    return this.locationOfKey.get(key)?.tenant;
  }

  /**
   * Inserts or replaces rows; within one call the last row of a key wins. `graph: false` leaves
   * the HNSW graph alone: a restart places every row first, then loads the graph from a snapshot
   * or adds the rows to it with `graphSlices`.
   */
  upsert(vectors: StoredVector[], { graph = true }: { graph?: boolean } = {}): void {
    const lastOfKey = new Map<number, StoredVector>();
    for (const vector of vectors) lastOfKey.set(vector.key, vector);
    const replaced = [...lastOfKey.keys()].filter((key) => this.locationOfKey.has(key));
    if (graph && replaced.length > 0) this.annIndex.remove(BigUint64Array.from(replaced, BigInt));

    const annKeys = new BigUint64Array(lastOfKey.size);
    const annRows = new Float32Array(lastOfKey.size * this.dimension);
    let row = 0;
    for (const vector of lastOfKey.values()) {
      const unitRow = annRows.subarray(row * this.dimension, (row + 1) * this.dimension);
      copyNormalised(vector.embedding, unitRow);
      annKeys[row++] = BigInt(vector.key);
      const location = this.locationOfKey.get(vector.key);
      if (location && location.tenant === vector.tenant) {
        location.block.replace(location.slot, unitRow, vector.metadata);
        continue;
      }
      if (location) this.removeRow(vector.key, location);
      const block = this.blockFor(vector.tenant);
      const slot = block.append(vector.key, unitRow, vector.metadata);
      this.locationOfKey.set(vector.key, { block, slot, tenant: vector.tenant });
    }
    if (graph) this.addToGraph(annKeys, annRows);
  }

  private addToGraph(keys: BigUint64Array, unitRows: Float32Array): void {
    this.annIndex.add(keys, unitRows, keys.length >= parallelAddMinimumRows ? 0 : 1);
  }

  /**
   * Adds every placed row to an empty graph, `rowsPerSlice` at a time; the caller yields between
   * slices so a rebuild does not stall request handling.
   */
  *graphSlices(rowsPerSlice: number): Generator<void> {
    const locations = [...this.locationOfKey];
    for (let start = 0; start < locations.length; start += rowsPerSlice) {
      const slice = locations.slice(start, start + rowsPerSlice);
      const keys = new BigUint64Array(slice.length);
      const rows = new Float32Array(slice.length * this.dimension);
      slice.forEach(([key, location], row) => {
        keys[row] = BigInt(key);
        rows.set(location.block.rowAt(location.slot), row * this.dimension);
      });
      this.addToGraph(keys, rows);
      yield;
    }
  }

  /** SHA-256 over every key and its unit row in key order: what a saved graph must have been built from. */
  fingerprint(): string {
    const hash = createHash('sha256');
    const keyBytes = Buffer.alloc(8);
    for (const key of [...this.locationOfKey.keys()].sort((left, right) => left - right)) {
      const location = this.locationOfKey.get(key)!;
      keyBytes.writeDoubleLE(key);
      hash.update(keyBytes);
      const row = location.block.rowAt(location.slot);
      hash.update(new Uint8Array(row.buffer, row.byteOffset, row.byteLength));
    }
    return hash.digest('hex');
  }

  saveGraph(file: string): void {
    this.annIndex.save(file);
  }

  /** Replaces the graph with a saved one; false (graph emptied) when it does not hold exactly the placed rows. */
  loadGraph(file: string): boolean {
    try {
      this.annIndex.load(file);
      if (this.annIndex.size() === this.size && this.annIndex.dimensions() === this.dimension) return true;
    } catch {
      // A file usearch refuses is no graph: the caller rebuilds.
    }
    this.annIndex = this.emptyGraph();
    return false;
  }

  /** Removes the keys present; unknown keys are ignored. */
  remove(keys: number[]): void {
    const present = [...new Set(keys)].filter((key) => this.locationOfKey.has(key));
    if (present.length === 0) return;
    this.annIndex.remove(BigUint64Array.from(present, BigInt));
    for (const key of present) this.removeRow(key, this.locationOfKey.get(key)!);
  }

  /** Cosine similarity of a unit-length query with a stored key's row. */
  similarity(unitQuery: Float32Array, key: number): number {
    const location = this.locationOfKey.get(key);
    return location ? location.block.similarityAt(unitQuery, location.slot) : Number.NEGATIVE_INFINITY;
  }

  /**
   * Exact top-k over one tenant's rows (`tenant` given, null included) or every row (undefined),
   * narrowed by a metadata predicate when one is given.
   */
  exactSearch(unitQuery: Float32Array, topK: number, tenant: string | null | undefined, allowedMetadata?: (metadata: Record<string, unknown>) => boolean): VectorHit[] {
    const best = new TopKHits(topK);
    const blocks = tenant === undefined ? this.blockOfTenant.values() : [this.blockOfTenant.get(tenant)].filter((block) => block !== undefined);
    for (const block of blocks) {
      block.searchInto(unitQuery, best, allowedMetadata && ((slot) => allowedMetadata(block.metadataAt(slot))));
    }
    return best.bestFirst();
  }

  /** Up to `sampleSize` metadata objects, evenly spaced over one tenant's rows or over every row. */
  sampleMetadata(tenant: string | null | undefined, sampleSize: number): Array<Record<string, unknown>> {
    const blocks = tenant === undefined ? [...this.blockOfTenant.values()] : [this.blockOfTenant.get(tenant)].filter((block) => block !== undefined);
    const total = blocks.reduce((sum, block) => sum + block.size, 0);
    const stride = Math.max(1, total / sampleSize);
    const sample: Array<Record<string, unknown>> = [];
    let position = 0;
    let blockStart = 0;
    for (const block of blocks) {
      for (; position < blockStart + block.size; position += stride) sample.push(block.metadataAt(Math.floor(position - blockStart)));
      blockStart += block.size;
    }
    return sample;
  }

  /** The HNSW graph's `count` nearest keys, in its order (callers rescore with `similarity`). */
  approximateNearestKeys(unitQuery: Float32Array, count: number): number[] {
    if (this.size === 0) return [];
    // One query runs on the calling thread: a worker hand-off costs more than the search.
    const matches = this.annIndex.search(unitQuery, Math.min(count, this.size), 1);
    return Array.from(matches.keys, Number);
  }

  private blockFor(tenant: string | null): RowBlock {
    let block = this.blockOfTenant.get(tenant);
    if (!block) this.blockOfTenant.set(tenant, (block = new RowBlock(this.dimension)));
    return block;
  }

  private removeRow(key: number, location: Location): void {
    const movedKey = location.block.removeAt(location.slot);
    if (movedKey !== undefined) this.locationOfKey.get(movedKey)!.slot = location.slot;
    if (location.block.size === 0) this.blockOfTenant.delete(location.tenant);
    this.locationOfKey.delete(key);
  }
}
