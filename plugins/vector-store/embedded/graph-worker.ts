/**
 * The thread side of graph-thread.ts: holds the usearch HNSW graphs. Requests that change a graph
 * are applied in the order they arrive, inserts and removals a slice of rows at a time; a search
 * is answered as soon as it arrives, between two slices, from the graphs as they stand.
 *
 * Why searches do not wait their turn: one thread serves every collection, one insert request of
 * 1,000 384-dim rows takes 60-350 ms and a removal of 1,000 keys 70-135 ms. While another
 * collection was ingested or reprocessed, a search waited behind all of them: semantic_ms up to
 * 1.5-1.8 s against ~1 ms idle (bench/results/ingest-while-querying-before.json). Answered between
 * slices, it waits for the slice under way at most (bench/results/ingest-while-querying.json). A
 * graph that has not applied every write yet answers without the rows still to come;
 * collection-vectors.ts scores those rows itself, so an answer still reflects every write made
 * before the search.
 */
import { parentPort } from 'node:worker_threads';
import usearch, { type Index as UsearchIndex } from 'usearch';
import { errorFields, READY_ID, type ThreadAnswer } from '../../../src/threads/thread-requests.js';
import type { AnnSettings } from './collection-vectors.js';
import type { GraphRequest } from './graph-thread.js';

/**
 * The longest a search waits for graph work, roughly: rows are inserted or removed in slices sized
 * to take this long, from the cost per row measured on the request's earlier slices. Against
 * requests of 1,000 rows, inserts lose ~15 % of their rate in 2.5 ms slices and ~3 % in 5 ms ones
 * (384-dim rows, 2 idle cores).
 */
const sliceBudgetMs = 5;
/** Rows of a request's first slice, before its cost per row is known. */
const firstSliceRows = 8;
/**
 * One thread per insert. usearch's parallel inserts leave rows that no other row links to
 * (unum-cloud/USearch#735): stored, yet never returned by a graph search, however wide. With every
 * core inserting (0), 1-5 of 20,000 clustered 384-dim rows were out of reach in each of three
 * builds, and none with one thread, which inserts about half as fast (3,972-4,493 against
 * 7,568-8,470 rows/s on a 2-core host, bench/results/graph-reachability.json). A chunk that
 * semantic search can never return is a wrong answer; a graph that catches up later is a slower
 * one (searches score the rows it has not taken yet themselves). usearch's binding sets up its
 * per-thread insert state for the threads of the insert that grew a graph (every core when it
 * loads one), so an insert on more threads than that fails ("Reserve capacity ahead of
 * insertions!"): all inserts use the same count.
 */
const insertThreads = 1;

interface Graph {
  index: UsearchIndex;
  dimension: number;
  ann: AnnSettings;
}

type RowRequest = Extract<GraphRequest, { op: 'add' | 'remove' }>;
type OrderedRequest = Exclude<GraphRequest, { op: 'search' | 'create' }>;

/** A request that changes a graph, with how much of it is done (inserts and removals go by slices). */
interface Write {
  request: OrderedRequest;
  rowsDone: number;
  msSpent: number;
}

const graphs = new Map<number, Graph>();
/** Writes not finished yet, oldest first: each graph sees its writes in the order they were sent. */
const backlog: Write[] = [];
const port = parentPort!;

function emptyIndex(dimension: number, ann: AnnSettings): UsearchIndex {
  return new usearch.Index({
    dimensions: dimension,
    metric: usearch.MetricKind.Cos,
    quantization: ann.quantization === 'f16' ? usearch.ScalarKind.F16 : usearch.ScalarKind.F32,
    connectivity: ann.connectivity,
    expansion_add: ann.expansionAdd,
    expansion_search: ann.expansionSearch,
    multi: false,
  });
}

function graphOf(id: number): Graph {
  const graph = graphs.get(id);
  if (!graph) throw new Error(`no graph ${id}`);
  return graph;
}

function answer(id: number, work: () => unknown): void {
  try {
    port.postMessage({ id, result: work() } satisfies ThreadAnswer);
  } catch (error) {
    port.postMessage({ id, error: errorFields(error) } satisfies ThreadAnswer);
  }
}

function nextSliceRows(write: Write, total: number): number {
  if (write.rowsDone === 0) return firstSliceRows;
  const msPerRow = write.msSpent / write.rowsDone;
  // Rows too quick for the clock to time go all at once.
  return msPerRow > 0 ? Math.max(1, Math.floor(sliceBudgetMs / msPerRow)) : total;
}

/** Inserts or removes the request's next slice of rows; true once every row is done. */
function applyRowSlice(write: Write, request: RowRequest): boolean {
  const total = request.keys.length;
  const end = Math.min(total, write.rowsDone + nextSliceRows(write, total));
  const graph = graphOf(request.graph);
  const keys = request.keys.subarray(write.rowsDone, end);
  const started = performance.now();
  if (request.op === 'add') {
    graph.index.add(keys, request.rows.subarray(write.rowsDone * graph.dimension, end * graph.dimension), insertThreads);
  } else {
    graph.index.remove(keys);
  }
  write.msSpent += performance.now() - started;
  write.rowsDone = end;
  return end === total;
}

function applyWhole(request: Exclude<OrderedRequest, RowRequest>): unknown {
  switch (request.op) {
    case 'save':
      graphOf(request.graph).index.save(request.file);
      return null;
    case 'load': {
      const graph = graphOf(request.graph);
      try {
        graph.index.load(request.file);
        if (graph.index.size() === request.expectedSize && graph.index.dimensions() === graph.dimension) return true;
      } catch {
        // A file usearch refuses is no graph: the caller rebuilds.
      }
      graph.index = emptyIndex(graph.dimension, graph.ann);
      return false;
    }
    case 'drop':
      graphs.delete(request.graph);
      return null;
    case 'sync':
      return null;
  }
}

/**
 * One slice of the oldest write, then back to the event loop, which delivers the requests that
 * arrived meanwhile: searches among them are answered before the next slice.
 */
function workOnBacklog(): void {
  const write = backlog[0]!;
  const { request } = write;
  let outcome: { result: unknown } | { error: Record<string, unknown> } | undefined;
  try {
    if (request.op !== 'add' && request.op !== 'remove') outcome = { result: applyWhole(request) };
    else if (applyRowSlice(write, request)) outcome = { result: null };
  } catch (error) {
    // The rest of a failed write is not applied: the caller stops trusting that graph.
    outcome = { error: errorFields(error) };
  }
  if (outcome) {
    backlog.shift();
    port.postMessage({ id: request.id, ...outcome } satisfies ThreadAnswer);
  }
  if (backlog.length > 0) setImmediate(workOnBacklog);
}

port.on('message', (request: GraphRequest) => {
  switch (request.op) {
    case 'search':
      answer(request.id, () => {
        // One query on this thread: usearch's own threads cost more than the search.
        const matches = graphOf(request.graph).index.search(request.query, request.count, 1);
        return Array.from(matches.keys, Number);
      });
      return;
    case 'create':
      // At once, not behind the backlog: a graph's first request, which its searches must find.
      answer(request.id, () => {
        graphs.set(request.graph, { index: emptyIndex(request.dimension, request.ann), dimension: request.dimension, ann: request.ann });
        return null;
      });
      return;
    default:
      backlog.push({ request, rowsDone: 0, msSpent: 0 });
      if (backlog.length === 1) setImmediate(workOnBacklog);
  }
});
port.postMessage({ id: READY_ID, result: null } satisfies ThreadAnswer);
