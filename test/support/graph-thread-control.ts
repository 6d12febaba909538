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
