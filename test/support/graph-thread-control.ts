import type { GraphThread } from '../../plugins/vector-store/embedded/graph-thread.js';

/** The graph thread dies (as on a crash in usearch), without the store closing it. */
export async function killGraphThread(graphs: GraphThread): Promise<void> {
  await (graphs as unknown as { requests: { worker: { terminate(): Promise<number> } } }).requests.worker.terminate();
}
