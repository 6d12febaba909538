/**
 * The HNSW graphs of the embedded store live on a thread of their own. Inserting into a graph is
 * the costliest step of writing a vector (~0.15-0.4 ms a vector for local-embedder vectors, which
 * spread widely); done on the main thread it took ~20 % of that thread's time while ingesting
 * (bench/search/ingest-profile.ts), stalling HTTP and the next batch. Writes are posted and not
 * waited for. The thread applies each graph's writes in the order they were sent, and answers a
 * search without waiting for them (graph-worker.ts); CollectionVectors scores the rows of inserts
 * not answered yet itself, so a search still sees every write made before it. The thread starts
 * with the first graph and keeps the process alive only while a request is out; one that dies is
 * replaced on the next request.
 *
 * Rows are written faster than the thread inserts them while a large file is ingested: at 200 MiB
 * of text, 337 MiB of row copies were queued on the thread when the document was ready, and RSS
 * rose for minutes more (bench/results/ingest-memory.json). Writes of graphs therefore go out in
 * order through `write`, and an insert waits on this side, as keys only, while `maxRowsInFlight`
 * rows are out; its rows are copied from the store's when it is sent. Making the writer wait
 * instead doubled the time until that document was ready (136 -> 297 s), as the graph sets the pace.
 */
import { startModuleWorker } from '../../../src/threads/module-worker.js';
import { ThreadRequests } from '../../../src/threads/thread-requests.js';
import type { AnnSettings } from './collection-vectors.js';

type Request =
  | { op: 'create'; graph: number; dimension: number; ann: AnnSettings }
  | { op: 'add'; graph: number; keys: BigUint64Array; rows: Float32Array }
  | { op: 'remove'; graph: number; keys: BigUint64Array }
  | { op: 'search'; graph: number; query: Float32Array; count: number }
  | { op: 'save'; graph: number; file: string }
  | { op: 'load'; graph: number; file: string; expectedSize: number }
  | { op: 'drop'; graph: number }
  | { op: 'sync'; graph: number };

export type GraphRequest = Request & { id: number };

type OrderedRequest = Exclude<Request, { op: 'create' | 'search' }>;

/** A request and the buffers that move with it. */
export interface OutgoingRequest {
  request: OrderedRequest;
  transfer?: ArrayBuffer[];
}

/** A write not sent yet: built when it goes, so an insert copies its rows as they are then. */
interface QueuedWrite {
  rows: number;
  build: () => OutgoingRequest;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}

/**
 * Rows of inserts sent to the thread and not answered yet, across graphs, past which inserts wait
 * as keys: at most 48 MiB of 384-dim row copies, against 337 MiB unbounded. It is still ~25 s of
 * work at the ~1,300 rows/s the thread inserted while a 200 MiB file was ingested on a shared
 * 2-core host, so the thread never waits for the next insert to be built.
 */
export const maxRowsInFlight = 32_768;

export class GraphThread {
  private requests: ThreadRequests | undefined;
  /** The thread each graph was created on: a graph dies with its thread. */
  private readonly threadOfGraph = new Map<number, ThreadRequests>();
  private nextGraph = 1;
  private closed = false;
  private insertRowsInFlight = 0;
  /** Writes waiting for room, oldest first; a write behind them waits too, to keep the order. */
  private readonly queued: QueuedWrite[] = [];

  /** `onStop` hears why a thread died (not when close() stops it). */
  constructor(private readonly onStop?: (reason: Error) => void) {}

  /**
   * The running thread, started again after one died: the graphs it held are gone (their
   * collections scan exactly until a restart rebuilds them), but collections loaded from now on
   * get working graphs.
   */
  private thread(): ThreadRequests {
    if (!this.requests || this.requests.stopped) {
      this.requests = new ThreadRequests(startModuleWorker(import.meta.url, 'graph-worker'), 'vector graph', this.onStop);
    }
    return this.requests;
  }

  /**
   * A request about a graph goes to the thread that holds it. After close() it is refused rather
   * than starting a thread nobody will stop; so is one about a graph whose thread died (a new
   * thread does not hold it). Searches come here directly; writes through `write`.
   */
  send<T = null>(request: Exclude<Request, { op: 'create' }>, transfer: Array<ArrayBuffer> = []): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the vector graph thread is closed'));
    const holder = this.threadOfGraph.get(request.graph);
    if (request.op === 'drop') this.threadOfGraph.delete(request.graph);
    if (!holder || holder.stopped) return Promise.reject(new Error(`graph ${request.graph} was lost with the thread that held it`));
    // Counted before sending: the keys' buffer moves to the thread.
    const insertRows = request.op === 'add' ? request.keys.length : 0;
    const answered = holder.request<T>(request, transfer);
    if (insertRows > 0) this.countInFlight(insertRows, answered);
    return answered;
  }

  /**
   * Sends a write (`rows`: at most the rows it inserts) after the writes queued before it, once
   * its rows fit within `maxRowsInFlight` (a larger insert goes alone); at once when it can.
   */
  write<T = null>(rows: number, build: () => OutgoingRequest): Promise<T> {
    if (this.queued.length === 0 && this.hasRoomFor(rows)) return this.sendBuilt<T>(build);
    return new Promise<T>((resolve, reject) => this.queued.push({ rows, build, resolve: resolve as (result: unknown) => void, reject }));
  }

  private hasRoomFor(rows: number): boolean {
    return rows === 0 || this.insertRowsInFlight === 0 || this.insertRowsInFlight + rows <= maxRowsInFlight;
  }

  private sendBuilt<T>(build: () => OutgoingRequest): Promise<T> {
    const { request, transfer } = build();
    return this.send<T>(request, transfer);
  }

  /** An answered or failed insert (a dead thread fails them all) frees its rows' room. */
  private countInFlight(rows: number, answered: Promise<unknown>): void {
    this.insertRowsInFlight += rows;
    const release = () => {
      this.insertRowsInFlight -= rows;
      // Next microtask: everyone awaiting this answer hears of it before the next insert goes.
      queueMicrotask(() => this.sendQueued());
    };
    answered.then(release, release);
  }

  private sendQueued(): void {
    while (this.queued.length > 0 && this.hasRoomFor(this.queued[0]!.rows)) {
      const write = this.queued.shift()!;
      this.sendBuilt(write.build).then(write.resolve, write.reject);
    }
  }

  /** A new empty graph on the running thread (started if need be); its id names it in later requests. */
  create(dimension: number, ann: AnnSettings): { id: number; created: Promise<null> } {
    const id = this.nextGraph++;
    if (this.closed) return { id, created: Promise.reject(new Error('the vector graph thread is closed')) };
    const thread = this.thread();
    this.threadOfGraph.set(id, thread);
    return { id, created: thread.request<null>({ op: 'create', graph: id, dimension, ann }) };
  }

  /** Whether the graph is held by the running thread (false once that thread died). */
  holds(graph: number): boolean {
    const holder = this.threadOfGraph.get(graph);
    return holder !== undefined && !holder.stopped;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const write of this.queued.splice(0)) write.reject(new Error('the vector graph thread is closed'));
    await this.requests?.terminate('the vector graph thread is closed');
    this.requests = undefined;
    this.threadOfGraph.clear();
  }
}
