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

export class GraphThread {
  private requests: ThreadRequests | undefined;
  /** The thread each graph was created on: a graph dies with its thread. */
  private readonly threadOfGraph = new Map<number, ThreadRequests>();
  private nextGraph = 1;
  private closed = false;

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
   * thread does not hold it).
   */
  send<T = null>(request: Exclude<Request, { op: 'create' }>, transfer: Array<ArrayBuffer> = []): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the vector graph thread is closed'));
    const holder = this.threadOfGraph.get(request.graph);
    if (request.op === 'drop') this.threadOfGraph.delete(request.graph);
    if (!holder || holder.stopped) return Promise.reject(new Error(`graph ${request.graph} was lost with the thread that held it`));
    return holder.request<T>(request, transfer);
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
    await this.requests?.terminate('the vector graph thread is closed');
    this.requests = undefined;
    this.threadOfGraph.clear();
  }
}
