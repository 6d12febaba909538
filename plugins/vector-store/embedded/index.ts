/**
 * The `embedded` vector store, default on the embedded (PGlite) database: an in-process usearch
 * HNSW index per collection, with every vector also written to `embedded_vectors` in the same call.
 * The table is the source of truth: a crash loses nothing, and `ensureCollection` after a restart
 * rebuilds the index from it. Why not pgvector there: HNSW maintenance in PGlite costs ~7 ms a row
 * (~130-200 rows/s); this store inserts ~6,800 vectors/s with persistence, graph inserts included,
 * on a 2-core machine (bench/results/vector-stores.json, 100k vectors). The graphs live on a thread
 * of their own (graph-thread.ts): an upsert returns once the row is in the table and in memory, and
 * the graph insert follows. Searches wait for no graph insert, of their collection or another: a
 * row the graph does not hold yet is scored exactly (collection-vectors.ts).
 *
 * Memory per 384-dim vector: 1.5 kB of f32 row (exact scans, scores), 0.8 kB of f16 copy in the
 * HNSW graph and ~0.3 kB of its links: ~2.6 kB, ~260 MB per million vectors.
 */
import { ConflictError, ServiceUnavailableError, UnprocessableError } from '../../../src/errors.js';
import type { PluginDefinition, PluginLogger, SqlRunner, VectorHit, VectorRecord, VectorSearchRequest, VectorStorageDetails, VectorStore } from '../../../src/plugins.js';
import { CollectionVectors, defaultAnnSettings, type AnnSettings, type StoredVector } from './collection-vectors.js';
import { defaultSearchThresholds, searchCollectionVectors, type SearchThresholds } from './filtered-search.js';
import { GraphSnapshots } from './graph-snapshots.js';
import { GraphThread } from './graph-thread.js';
import { normalised } from './row-block.js';
import { decodeEmbeddingInto, EmbeddedVectorTable } from './vector-table.js';

export interface EmbeddedVectorStoreOptions {
  ann?: Partial<AnnSettings>;
  thresholds?: Partial<SearchThresholds>;
  /** Where graphs are saved on close and loaded at the next start; none: always rebuilt. */
  snapshotDirectory?: string | undefined;
  logger?: PluginLogger | undefined;
}

/**
 * Rows per insert statement: 1,000 384-dim rows are ~2 MB of base64, and one statement holds
 * PGlite's single connection for ~0.1 s, short enough not to starve concurrent reads.
 */
const persistBatchRows = 1_000;
/** Rows per page when rebuilding: ~10 MB of base64 per 384-dim page. */
const loadPageRows = 5_000;
/** Rows per graph insert request when rebuilding (~1.5 MB of 384-dim rows a message). */
const rebuildAddRows = 1_000;
/**
 * A graph is saved at close only once it holds every row sent to it, and the thread takes rows in
 * at ~300-4,000 a second: after a load of 191k chunks, 87,800 rows awaited it, and waiting for
 * them ran past the 25 s the process allows its stop, so it exited without closing the database
 * cleanly. A graph still behind after this long is not saved; the next start rebuilds it, which
 * is the same work the thread had left. Graphs wait at once, so 5 s in all leaves the stop time
 * after ingestion's 15 s wait.
 */
const graphSaveWaitMs = 5_000;

export class EmbeddedVectorStore implements VectorStore {
  readonly name = 'embedded';
  private readonly table: EmbeddedVectorTable;
  private readonly ann: AnnSettings;
  private readonly thresholds: SearchThresholds;
  private readonly snapshots: GraphSnapshots | null;
  private readonly graphs = new GraphThread((reason) => this.logger?.warn(
    { err: reason }, 'the vector graph thread stopped: collections loaded until now search exactly until the next start',
  ));
  /** Loaded (or loading) collections; concurrent callers await the same promise. */
  private readonly collections = new Map<string, Promise<CollectionVectors>>();
  /** How each loaded collection came into memory. */
  private readonly loads = new Map<string, { source: 'snapshot' | 'rebuild'; seconds: number }>();
  /** Writes run one after another per collection, so memory applies them in the database's order. */
  private readonly writeQueues = new Map<string, Promise<unknown>>();
  private closed = false;
  private readonly logger: PluginLogger | undefined;

  constructor(sql: SqlRunner, options: EmbeddedVectorStoreOptions = {}) {
    this.table = new EmbeddedVectorTable(sql);
    this.ann = { ...defaultAnnSettings, ...options.ann };
    this.thresholds = { ...defaultSearchThresholds, ...options.thresholds };
    this.snapshots = options.snapshotDirectory ? new GraphSnapshots(options.snapshotDirectory) : null;
    this.logger = options.logger;
  }

  get settings(): Record<string, number | string> {
    return {
      connectivity: this.ann.connectivity, expansion_add: this.ann.expansionAdd, expansion_search: this.ann.expansionSearch,
      graph_quantization: this.ann.quantization, exact_search_below: this.thresholds.exactSearchBelow,
    };
  }

  async ensureCollection(collectionId: string, dimension: number): Promise<void> {
    await this.loadedCollection(collectionId, dimension);
  }

  async upsert(records: VectorRecord[]): Promise<void> {
    for (const [collectionId, group] of groupByCollection(records)) {
      const vectors = await this.loadedCollection(collectionId, group[0].embedding.length);
      for (const record of group) checkDimension(collectionId, vectors.dimension, record.embedding.length);
      await this.serially(collectionId, async () => {
        for (let start = 0; start < group.length; start += persistBatchRows) {
          const batch = group.slice(start, start + persistBatchRows);
          await this.table.upsert(collectionId, batch);
          // Applied right after its statement commits: memory never holds what the table lacks.
          vectors.upsert(batch.map(toStoredVector));
        }
      });
    }
  }

  async delete(collectionId: string, keys: number[]): Promise<void> {
    this.assertOpen();
    if (keys.length === 0) return;
    await this.serially(collectionId, async () => {
      const vectors = await this.collections.get(collectionId)?.catch(() => undefined);
      // A truncate removes every key: the graph is dropped whole, not taken apart node by node. The
      // writes are serial, so the table holds no key that memory lacks.
      if (vectors && vectors.size > 0 && vectors.holdsOnly(keys)) {
        await this.emptyCollection(collectionId, vectors);
        return;
      }
      await this.table.delete(collectionId, keys);
      vectors?.remove(keys);
    });
  }

  async dropCollection(collectionId: string): Promise<void> {
    this.assertOpen();
    await this.serially(collectionId, async () => {
      await this.emptyCollection(collectionId, await this.collections.get(collectionId)?.catch(() => undefined));
    });
  }

  /** Deletes every vector of the collection and forgets its graph; the next use loads it again (empty). */
  private async emptyCollection(collectionId: string, vectors: CollectionVectors | undefined): Promise<void> {
    await this.table.deleteCollection(collectionId);
    vectors?.dispose();
    this.collections.delete(collectionId);
    this.loads.delete(collectionId);
    await this.snapshots?.remove(collectionId);
  }

  async search(request: VectorSearchRequest): Promise<VectorHit[]> {
    const vectors = await this.loadedCollection(request.collectionId, request.embedding.length);
    checkDimension(request.collectionId, vectors.dimension, request.embedding.length);
    return searchCollectionVectors(
      vectors,
      { unitQuery: normalised(request.embedding), topK: request.topK, tenant: request.tenant ?? null, filter: request.filter ?? null, keys: request.keys },
      this.thresholds,
    );
  }

  async count(collectionId: string): Promise<number> {
    this.assertOpen();
    const loading = this.collections.get(collectionId);
    if (loading) return (await loading).size;
    return this.table.count(collectionId);
  }

  async describe(collectionId: string): Promise<VectorStorageDetails> {
    const load = this.loads.get(collectionId);
    const loading = this.collections.get(collectionId);
    // A collection still loading counts as not loaded: describing it must not wait for the load.
    if (!load || !loading) return { vectors: await this.table.count(collectionId), memory_index: { loaded: false } };
    const vectors = await loading;
    return {
      vectors: vectors.size,
      memory_index: {
        loaded: true,
        source: load.source,
        load_seconds: load.seconds,
        approximate_bytes: vectors.size * bytesPerVector(vectors.dimension, this.ann),
        graph_usable: vectors.graphUsable,
        rows_awaiting_graph: vectors.rowsAwaitingGraph,
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.writeQueues.values(), ...this.collections.values()]);
    if (this.snapshots) {
      // Every graph is asked at once: one far behind does not use up the others' wait.
      const asked: Array<{ collectionId: string; vectors: CollectionVectors; rowsAwaiting: number; current: Promise<boolean> }> = [];
      for (const [collectionId, loading] of this.collections) {
        const vectors = await loading.catch(() => null);
        // A graph that missed a write must not be loaded at the next start as if it were whole.
        if (!vectors?.graphUsable) continue;
        // Every graph request sent so far answered: a write that failed is known before saving.
        const current = settlesWithin(vectors.graphCurrent(), graphSaveWaitMs);
        // Read below, after the saves before it: a failure meanwhile is not unhandled.
        current.catch(() => undefined);
        asked.push({ collectionId, vectors, rowsAwaiting: vectors.rowsAwaitingGraph, current });
      }
      for (const { collectionId, vectors, rowsAwaiting, current } of asked) {
        try {
          if (!await current) {
            await this.snapshots.remove(collectionId);
            this.logger?.info({ collectionId, rowsAwaitingGraph: rowsAwaiting }, 'the vector graph had not taken in every row by the stop; not saved, the next start rebuilds it');
            continue;
          }
          if (vectors.graphUsable) await this.snapshots.save(collectionId, vectors, this.ann);
        } catch (error) {
          // The other graphs are still saved; this one is rebuilt from the table at the next start.
          await this.snapshots.remove(collectionId).catch(() => undefined);
          this.logger?.warn({ err: error, collectionId }, 'could not save the vector graph; the next start rebuilds it');
        }
      }
    }
    this.collections.clear();
    this.writeQueues.clear();
    await this.graphs.close();
  }

  /** The collection's in-memory index, rebuilt from the table on first use after a start. */
  private async loadedCollection(collectionId: string, dimension: number): Promise<CollectionVectors> {
    this.assertOpen();
    if (!Number.isInteger(dimension) || dimension < 1) {
      throw new UnprocessableError(`vector dimension must be a positive integer, got ${dimension}`);
    }
    let loading = this.collections.get(collectionId);
    if (!loading) {
      loading = this.rebuild(collectionId, dimension);
      this.collections.set(collectionId, loading);
      // A failed load is forgotten so the next call retries it.
      loading.catch(() => {
        if (this.collections.get(collectionId) === loading) this.collections.delete(collectionId);
      });
    }
    const vectors = await loading;
    if (vectors.dimension !== dimension) {
      throw new ConflictError(`collection ${collectionId} holds ${vectors.dimension}-dimensional vectors, not ${dimension}`);
    }
    return vectors;
  }

  /**
   * Places every stored row, then loads the graph saved at the last close when it was made from
   * exactly these rows, or else posts the rows to a new graph. The collection answers as soon as
   * its rows are placed, scoring exactly those the graph has not taken in yet: waiting for the
   * graph kept a first query (or every query, during warm-up) waiting for minutes on a large
   * collection, as one thread inserts at most a few thousand rows a second.
   */
  private async rebuild(collectionId: string, dimension: number): Promise<CollectionVectors> {
    const started = performance.now();
    const snapshot = await this.snapshots?.take(collectionId);
    let vectors: CollectionVectors | undefined;
    try {
      vectors = await this.loadRows(collectionId, dimension);
      let source: 'snapshot' | 'rebuild' = 'snapshot';
      if (!(snapshot && await snapshot.matches(vectors, this.ann) && await vectors.loadGraph(snapshot.graphFile))) {
        source = 'rebuild';
        vectors.addAllToGraph(rebuildAddRows);
      }
      this.loads.set(collectionId, { source, seconds: Math.round(performance.now() - started) / 1000 });
      return vectors;
    } catch (error) {
      vectors?.dispose();
      throw error;
    } finally {
      await snapshot?.discard();
    }
  }

  private async loadRows(collectionId: string, dimension: number): Promise<CollectionVectors> {
    const vectors = new CollectionVectors(dimension, this.graphs, this.ann);
    try {
      await this.placeRows(vectors, collectionId, dimension);
      return vectors;
    } catch (error) {
      // A load that fails (the database, a vector of another length) would otherwise leave its
      // empty graph on the thread, once per retry.
      vectors.dispose();
      throw error;
    }
  }

  private async placeRows(vectors: CollectionVectors, collectionId: string, dimension: number): Promise<void> {
    const attributes = await this.table.chunkAttributes(collectionId, loadPageRows);
    for await (const page of this.table.pages(collectionId, loadPageRows)) {
      const pageMatrix = new Float32Array(page.keys.length * dimension);
      const batch = page.keys.map((key, row): StoredVector => {
        const embedding = pageMatrix.subarray(row * dimension, (row + 1) * dimension);
        if (!decodeEmbeddingInto(page.embeddings[row], embedding)) {
          throw new ConflictError(`collection ${collectionId}: stored vector ${key} does not have ${dimension} dimensions`);
        }
        const chunk = attributes.get(key);
        return { key, embedding, metadata: chunk?.metadata ?? {}, tenant: chunk?.tenant ?? null };
      });
      vectors.upsert(batch, { graph: false });
    }
  }

  private serially<T>(collectionId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.writeQueues.get(collectionId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const settled = result.catch(() => undefined);
    this.writeQueues.set(collectionId, settled);
    void settled.then(() => {
      if (this.writeQueues.get(collectionId) === settled) this.writeQueues.delete(collectionId);
    });
    return result;
  }

  private assertOpen(): void {
    if (this.closed) throw new ServiceUnavailableError('the embedded vector store is closed');
  }
}

/** f32 row (exact scans and scores), the graph's own copy, and about two links per graph degree. */
function bytesPerVector(dimension: number, ann: AnnSettings): number {
  return dimension * 4 + dimension * (ann.quantization === 'f16' ? 2 : 4) + ann.connectivity * 2 * 4;
}

function toStoredVector(record: VectorRecord): StoredVector {
  return { key: record.key, embedding: record.embedding, metadata: record.metadata, tenant: record.tenant };
}

function checkDimension(collectionId: string, expected: number, actual: number): void {
  if (actual !== expected) {
    throw new UnprocessableError(`collection ${collectionId} holds ${expected}-dimensional vectors; got ${actual} dimensions`);
  }
}

function groupByCollection(records: VectorRecord[]): Map<string, VectorRecord[]> {
  const groups = new Map<string, VectorRecord[]>();
  for (const record of records) {
    const group = groups.get(record.collectionId);
    if (group) group.push(record);
    else groups.set(record.collectionId, [record]);
  }
  return groups;
}

/**
 * Whether `promise` settles within `ms`. A rejection in time is thrown; one after it (the thread's
 * close rejects what is still out) is the race's, which ignores it.
 */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), ms); });
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Optional numeric overrides from the plugin config (the defaults are the measured choices). */
function optionsFromConfig(config: Record<string, unknown>): EmbeddedVectorStoreOptions {
  const read = (name: string, { zeroAllowed = false } = {}): number | undefined => {
    const value = config[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !(value > 0 || (zeroAllowed && value === 0))) {
      throw new UnprocessableError(`embedded vector store: ${name} must be a ${zeroAllowed ? 'non-negative' : 'positive'} number`);
    }
    return value;
  };
  const pick = <T extends object>(entries: Array<[keyof T, number | undefined]>): Partial<T> =>
    Object.fromEntries(entries.filter(([, value]) => value !== undefined)) as Partial<T>;
  return {
    ann: pick<AnnSettings>([
      ['connectivity', read('connectivity')],
      ['expansionAdd', read('expansionAdd')],
      ['expansionSearch', read('expansionSearch')],
    ]),
    thresholds: pick<SearchThresholds>([
      ['exactSearchBelow', read('exactSearchBelow')],
      ['exactScanMaxFraction', read('exactScanMaxFraction')],
      ['exactTenantScanMaxRows', read('exactTenantScanMaxRows')],
      ['exactScanAwaitingShare', read('exactScanAwaitingShare')],
      // 0: the index of metadata values is not used.
      ['indexedCandidatesScale', read('indexedCandidatesScale', { zeroAllowed: true })],
      ['selectivitySampleSize', read('selectivitySampleSize')],
      ['oversampling', read('oversampling')],
    ]),
  };
}

export const embeddedVectorStorePlugin: PluginDefinition<'vector-store'> = {
  kind: 'vector-store',
  name: 'embedded',
  description: 'In-process usearch HNSW index per collection, vectors persisted in the service database; exact filtering',
  create(config, deps) {
    if (!deps.sql) throw new ServiceUnavailableError('the embedded vector store needs the service database (deps.sql)');
    return new EmbeddedVectorStore(deps.sql, { ...optionsFromConfig(config), snapshotDirectory: deps.stateDirectory, logger: deps.logger });
  },
};
