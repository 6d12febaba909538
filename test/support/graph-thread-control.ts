import type { GraphThread } from '../../plugins/vector-store/embedded/graph-thread.js';

/** The graph thread of an embedded vector store (a private field). */
export function graphThreadOf(store: unknown): GraphThread {
  return (store as { graphs: GraphThread }).graphs;
}

/** The graph thread dies (as on a crash in usearch), without the store closing it. */
export async function killGraphThread(graphs: GraphThread): Promise<void> {
  await (graphs as unknown as { requests: { worker: { terminate(): Promise<number> } } }).requests.worker.terminate();
}

/** How many graphs the store has created and not dropped (each holds memory on the thread). */
export function graphsHeld(graphs: GraphThread): number {
  return (graphs as unknown as { threadOfGraph: Map<number, unknown> }).threadOfGraph.size;
}

/**
 * Records the op of every request sent to the graphs from now on; with `failSearches`, a search
 * is answered with an error (as a failing usearch call) instead of being sent.
 */
export function recordGraphRequests(graphs: GraphThread, options: { failSearches?: boolean } = {}): string[] {
  const ops: string[] = [];
  const send = graphs.send.bind(graphs);
  graphs.send = ((request: Parameters<GraphThread['send']>[0], transfer?: ArrayBuffer[]) => {
    ops.push(request.op);
    if (options.failSearches && request.op === 'search') return Promise.reject(new Error('usearch failed'));
    return send(request, transfer);
  }) as GraphThread['send'];
  return ops;
}

/**
 * Tracks the rows of graph inserts sent and not answered yet, as the writers see them; `max` is
 * the most there ever were at once.
 */
export function recordInsertRowsInFlight(graphs: GraphThread): { max: number; now: number } {
  const rowsInFlight = { max: 0, now: 0 };
  const send = graphs.send.bind(graphs);
  graphs.send = ((request: Parameters<GraphThread['send']>[0], transfer?: ArrayBuffer[]) => {
    // Read before sending: the keys' buffer moves to the thread.
    const rows = request.op === 'add' ? request.keys.length : 0;
    const answered = send(request, transfer);
    if (rows === 0) return answered;
    rowsInFlight.now += rows;
    rowsInFlight.max = Math.max(rowsInFlight.max, rowsInFlight.now);
    const release = () => {
      rowsInFlight.now -= rows;
    };
    answered.then(release, release);
    return answered;
  }) as GraphThread['send'];
  return rowsInFlight;
}

/**
 * The graph thread's answers to inserts are held back until `release()`, as from a thread far
 * behind the writes (the inserts themselves are applied, in order).
 */
export function holdInsertAnswers(graphs: GraphThread): { release(): void } {
  const requests = (graphs as unknown as { requests: { request(message: Record<string, unknown>, transfer?: unknown[]): Promise<unknown> } }).requests;
  const request = requests.request.bind(requests);
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  requests.request = async (message, transfer) => {
    const answer = await request(message, transfer);
    if (message.op === 'add') await released;
    return answer;
  };
  return { release };
}

/**
 * Settles once the thread has applied every graph write posted before the call: it applies them
 * in the order they were sent, across graphs.
 */
export async function graphWritesApplied(graphs: GraphThread): Promise<void> {
  const [graph] = (graphs as unknown as { threadOfGraph: Map<number, unknown> }).threadOfGraph.keys();
  if (graph !== undefined) await graphs.write(0, () => ({ request: { op: 'sync', graph } }));
}

/**
 * From the next insert on, that insert's graph gets no request through to the thread: each one
 * waits unanswered among the thread's pending requests, as behind a long backlog, until the
 * thread ends (which rejects it). Searches still reach the graph. Returns the ops held back.
 */
export function stallGraphOfNextInsert(graphs: GraphThread): string[] {
  type Message = { op: string; graph?: number };
  const requests = (graphs as unknown as {
    requests: { request(message: Message, transfer?: unknown[]): Promise<unknown>; pending: Map<number, unknown>; nextId: number };
  }).requests;
  const request = requests.request.bind(requests);
  const held: string[] = [];
  let stalled: number | undefined;
  requests.request = (message, transfer) => {
    if (stalled === undefined && message.op === 'add') stalled = message.graph;
    if (message.graph !== stalled || message.op === 'search') return request(message, transfer);
    held.push(message.op);
    return new Promise((resolve, reject) => requests.pending.set(requests.nextId++, { resolve, reject }));
  };
  return held;
}
