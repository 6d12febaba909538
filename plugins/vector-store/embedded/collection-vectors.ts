/**
 * One collection's vectors in memory: a `RowBlock` per tenant (rows of one tenant contiguous, so a
 * tenant restriction scans only that tenant's rows, sequentially), the location of every key, and
 * a usearch HNSW graph over all rows for approximate search, kept on the graph thread. The graph
 * answers a search without waiting for the inserts it has not applied yet (graph-worker.ts); the
 * rows of those inserts are candidates of every search until the graph holds them.
 */
import { createHash } from 'node:crypto';
import type { VectorHit } from '../../../src/plugins.js';
import type { MetadataFilter } from '../../../src/search/filters/filter-types.js';
import type { GraphThread, OutgoingRequest } from './graph-thread.js';
import { MetadataValueIndex, type FilterCandidates } from './metadata-value-index.js';
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
 * no measurable recall cost (results are rescored from the f32 rows). On the `local` embedder's
 * vectors of the search corpus (bench/results/ann-settings.json), recall is harder: expansion_search
 * 128 instead of 64 lifts recall@10 from 0.78 to 0.89 at 10k chunks (+0.08 ms a search) and from
 * 0.75 to 0.83 at 100k (+0.6 ms), where an answer of a RAG service is worth more than the time.
 */
export const defaultAnnSettings: AnnSettings = { connectivity: 16, expansionAdd: 64, expansionSearch: 128, quantization: 'f16' };

/**
 * A row to store: the embedding is copied and normalised, the caller's array is left alone. The
 * metadata object is kept as given and must not change afterwards: the index of metadata values
 * reads it again to forget the row's values when the row is replaced or removed.
 */
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

export class CollectionVectors {
  private readonly blockOfTenant = new Map<string | null, RowBlock>();
  private readonly locationOfKey = new Map<number, Location>();
  private readonly metadataValues = new MetadataValueIndex(() => this.keysWithMetadata());
  private readonly graph: number;
  /** Set when a graph request failed: the graph may lack rows, so searches scan exactly until the next start rebuilds it. */
  private graphFailure: Error | undefined;
  /** Numbers the graph inserts, so that an insert's answer releases only the keys no later insert carries. */
  private graphInsertsSent = 0;
  /** Keys whose row is in a graph insert not answered yet, with that insert's number. */
  private readonly keysAwaitingGraph = new Map<number, number>();

  constructor(
    readonly dimension: number,
    private readonly graphs: GraphThread,
    ann: AnnSettings = defaultAnnSettings,
  ) {
    const { id, created } = graphs.create(dimension, ann);
    this.graph = id;
    this.watch(created);
  }

  /** Graph writes are not waited for; a failure is remembered instead. */
  private watch(request: Promise<unknown>): void {
    request.catch((error: unknown) => this.markGraphFailed(error));
  }

  /** From now on searches scan exactly, until the next start rebuilds the graph. */
  private markGraphFailed(error: unknown): void {
    this.graphFailure ??= error instanceof Error ? error : new Error(String(error));
  }

  /** Whether approximate search can be trusted to reach every row. */
  get graphUsable(): boolean {
    return this.graphFailure === undefined && this.graphs.holds(this.graph);
  }

  get size(): number {
    return this.locationOfKey.size;
  }

  /** Whether every key held is among `keys` (removing them would leave nothing). */
  holdsOnly(keys: number[]): boolean {
    if (keys.length < this.locationOfKey.size) return false;
    let held = 0;
    for (const key of new Set(keys)) if (this.locationOfKey.has(key)) held += 1;
    return held === this.locationOfKey.size;
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
   * or adds the rows to it with `addAllToGraph`.
   */
  upsert(vectors: StoredVector[], { graph = true }: { graph?: boolean } = {}): void {
    const lastOfKey = new Map<number, StoredVector>();
    for (const vector of vectors) lastOfKey.set(vector.key, vector);
    const replaced = [...lastOfKey.keys()].filter((key) => this.locationOfKey.has(key));
    if (graph && replaced.length > 0) this.watch(this.removeFromGraph(replaced));

    const unitRow = new Float32Array(this.dimension);
    for (const vector of lastOfKey.values()) {
      copyNormalised(vector.embedding, unitRow);
      const location = this.locationOfKey.get(vector.key);
      if (location && location.tenant === vector.tenant) {
        this.metadataValues.removeRow(vector.key, location.block.metadataAt(location.slot));
        location.block.replace(location.slot, unitRow, vector.metadata);
        this.metadataValues.addRow(vector.key, vector.metadata);
        continue;
      }
      if (location) this.removeRow(vector.key, location);
      const block = this.blockFor(vector.tenant);
      const slot = block.append(vector.key, unitRow, vector.metadata);
      this.locationOfKey.set(vector.key, { block, slot, tenant: vector.tenant });
      this.metadataValues.addRow(vector.key, vector.metadata);
    }
    if (graph) this.watch(this.addToGraph([...lastOfKey.keys()]));
  }

  /**
   * Inserts the keys' rows into the graph, after the graph writes before it (graph-thread.ts may
   * hold it back); searches score the rows until the graph answers.
   */
  private addToGraph(keys: number[]): Promise<null> {
    const insert = ++this.graphInsertsSent;
    for (const key of keys) this.keysAwaitingGraph.set(key, insert);
    const sent = this.graphs.write<null>(keys.length, () => this.insertRequest(keys));
    // A failed insert releases its keys too: the graph is then not searched any more.
    const release = () => {
      for (const key of keys) if (this.keysAwaitingGraph.get(key) === insert) this.keysAwaitingGraph.delete(key);
    };
    sent.then(release, release);
    return sent;
  }

  /**
   * The insert of the keys still held, with their rows as they are when it is sent: a row replaced
   * meanwhile goes with its new vector (its removal and insert follow), a removed one not at all.
   */
  private insertRequest(keys: number[]): OutgoingRequest {
    const held = keys.filter((key) => this.locationOfKey.has(key));
    // Nothing left to insert: the no-op still answers in the insert's place.
    if (held.length === 0) return { request: { op: 'sync', graph: this.graph } };
    const annKeys = BigUint64Array.from(held, BigInt);
    const rows = new Float32Array(held.length * this.dimension);
    held.forEach((key, row) => {
      const location = this.locationOfKey.get(key)!;
      rows.set(location.block.rowAt(location.slot), row * this.dimension);
    });
    return { request: { op: 'add', graph: this.graph, keys: annKeys, rows }, transfer: [annKeys.buffer as ArrayBuffer, rows.buffer as ArrayBuffer] };
  }

  private removeFromGraph(keys: number[]): Promise<null> {
    return this.graphs.write(0, () => ({ request: { op: 'remove', graph: this.graph, keys: BigUint64Array.from(keys, BigInt) } }));
  }

  /**
   * Posts every placed row to an empty graph, `rowsPerInsert` at a time, and does not wait: as
   * after any insert, searches score the rows until the graph has taken them in.
   */
  addAllToGraph(rowsPerInsert: number): void {
    const keys = [...this.locationOfKey.keys()];
    for (let start = 0; start < keys.length; start += rowsPerInsert) this.watch(this.addToGraph(keys.slice(start, start + rowsPerInsert)));
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

  async saveGraph(file: string): Promise<void> {
    await this.graphs.write(0, () => ({ request: { op: 'save', graph: this.graph, file } }));
  }

  /** Replaces the graph with a saved one; false (graph emptied) when it does not hold exactly the placed rows. */
  loadGraph(file: string): Promise<boolean> {
    return this.graphs.write<boolean>(0, () => ({ request: { op: 'load', graph: this.graph, file, expectedSize: this.size } }));
  }

  /** Settles once the graph holds every write posted so far. */
  async graphCurrent(): Promise<void> {
    await this.graphs.write(0, () => ({ request: { op: 'sync', graph: this.graph } }));
  }

  /** Frees the graph; the rows stay searchable exactly. */
  dispose(): void {
    this.graphFailure ??= new Error('the graph was released');
    this.watch(this.graphs.write(0, () => ({ request: { op: 'drop', graph: this.graph } })));
  }

  /** Removes the keys present; unknown keys are ignored. */
  remove(keys: number[]): void {
    const present = [...new Set(keys)].filter((key) => this.locationOfKey.has(key));
    if (present.length === 0) return;
    this.watch(this.removeFromGraph(present));
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

  /**
   * The rows that may pass the filter, from the index of metadata values (any tenant), or null
   * when the filter has no condition it serves (metadata-value-index.ts).
   */
  filterCandidates(filter: MetadataFilter, intersectAtMost?: number): FilterCandidates | null {
    return this.metadataValues.candidates(filter, intersectAtMost);
  }

  private *keysWithMetadata(): Iterable<readonly [number, Record<string, unknown>]> {
    for (const [key, { block, slot }] of this.locationOfKey) yield [key, block.metadataAt(slot)] as const;
  }

  /**
   * Exact top-k among the listed keys held, narrowed to one tenant's rows (`tenant` given, null
   * included) and by a metadata predicate when given.
   */
  exactSearchOfKeys(
    unitQuery: Float32Array, topK: number, keys: Iterable<number>, tenant: string | null | undefined, allowedMetadata?: (metadata: Record<string, unknown>) => boolean,
  ): VectorHit[] {
    const best = new TopKHits(topK);
    for (const key of keys) {
      const location = this.locationOfKey.get(key);
      if (location === undefined || (tenant !== undefined && location.tenant !== tenant)) continue;
      if (allowedMetadata && !allowedMetadata(location.block.metadataAt(location.slot))) continue;
      best.offer(key, location.block.similarityAt(unitQuery, location.slot));
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

  /** Rows whose graph insert has not been answered yet (searches score them exactly). */
  get rowsAwaitingGraph(): number {
    return this.keysAwaitingGraph.size;
  }

  /**
   * The graph's `count` nearest rows that are held now and `allowed` (every row when not given),
   * with the `topK` best allowed rows of the inserts the graph had not answered when the search was
   * sent (it may not hold them yet), scored exactly here while the thread searches: only those can
   * reach a top-`topK` answer. `everyRow` when every row held was one of them (the answer is then
   * exact). Null when the graph could not answer (its thread died, say), which is remembered like
   * a failed write.
   *
   * The awaiting rows go through a top-`topK` heap: returning them all, for the caller to score and
   * sort, made a search with 1.5k-15k of 150k rows awaiting take 18.8 ms p50 instead of 8.6
   * (bench/results/pending-rows-search*.json).
   */
  async approximateNearest(
    unitQuery: Float32Array, count: number, topK: number, allowed?: (key: number) => boolean,
  ): Promise<{ hits: VectorHit[]; everyRow: boolean } | null> {
    if (this.size === 0) return { hits: [], everyRow: true };
    const searched = this.graphs.send<number[]>({ op: 'search', graph: this.graph, query: unitQuery, count: Math.min(count, this.size) });
    // Read in the tick the search was sent in: an insert answered later may have been applied after
    // the search ran. When the graph's answer and the awaiting rows together may be every row, they
    // are all kept, and the answer is then exact.
    const mayCoverEveryRow = count + this.keysAwaitingGraph.size >= this.size;
    const awaitingKeys = mayCoverEveryRow ? [...this.keysAwaitingGraph.keys()] : this.bestAwaitingKeys(unitQuery, topK, allowed);
    let graphKeys: number[];
    try {
      graphKeys = await searched;
    } catch (error) {
      this.markGraphFailed(error);
      return null;
    }
    // Only rows held now: the graph may still hold rows removed meanwhile (their removal waits
    // behind other writes), and an awaiting row may have been removed while the graph searched.
    const candidates = new Set<number>();
    for (const key of [...graphKeys, ...awaitingKeys]) if (this.locationOfKey.has(key)) candidates.add(key);
    const hits: VectorHit[] = [];
    for (const key of candidates) if (!allowed || allowed(key)) hits.push({ key, score: this.similarity(unitQuery, key) });
    return { hits, everyRow: candidates.size === this.size };
  }

  /** The keys of the `topK` best allowed rows among those awaiting the graph. */
  private bestAwaitingKeys(unitQuery: Float32Array, topK: number, allowed?: (key: number) => boolean): number[] {
    const best = new TopKHits(topK);
    for (const key of this.keysAwaitingGraph.keys()) {
      // A row removed since its insert was sent still awaits the insert's answer.
      const location = this.locationOfKey.get(key);
      if (location !== undefined && (!allowed || allowed(key))) best.offer(key, location.block.similarityAt(unitQuery, location.slot));
    }
    return best.bestFirst().map((hit) => hit.key);
  }

  private blockFor(tenant: string | null): RowBlock {
    let block = this.blockOfTenant.get(tenant);
    if (!block) this.blockOfTenant.set(tenant, (block = new RowBlock(this.dimension)));
    return block;
  }

  private removeRow(key: number, location: Location): void {
    this.metadataValues.removeRow(key, location.block.metadataAt(location.slot));
    const movedKey = location.block.removeAt(location.slot);
    if (movedKey !== undefined) this.locationOfKey.get(movedKey)!.slot = location.slot;
    if (location.block.size === 0) this.blockOfTenant.delete(location.tenant);
    this.locationOfKey.delete(key);
  }
}
