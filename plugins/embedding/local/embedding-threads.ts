/**
 * Worker threads for the local embedder. Hashing costs ~0.17 ms a chunk (bench/results/
 * local-embedder.json) on the thread that also serves HTTP, parses uploads and drives PGlite;
 * document batches are embedded on other cores instead. Queries (one text) stay on the calling
 * thread, where the ~0.1 ms hand-off would cost more than the work.
 *
 * Threads start on first use and keep the process alive only while a batch is out; one that dies
 * fails only its own batches and is replaced on the next call.
 */
import os from 'node:os';
import { startModuleWorker } from '../../../src/threads/module-worker.js';
import { ThreadRequests } from '../../../src/threads/thread-requests.js';

export class EmbeddingThreads {
  private readonly threads: ThreadRequests[] = [];

  constructor(private readonly size = Math.max(1, Math.min(4, os.availableParallelism() - 1))) {}

  /** `texts` embedded row-major into one matrix, on the least busy thread. */
  async embed(texts: string[], dimension: number): Promise<Float32Array> {
    try {
      return await this.leastBusy().request<Float32Array>({ texts, dimension });
    } catch (error) {
      throw new Error(`local embedding failed: ${(error as Error).message}`);
    }
  }

  private leastBusy(): ThreadRequests {
    if (this.threads.length < this.size) {
      const thread: ThreadRequests = new ThreadRequests(startModuleWorker(import.meta.url, 'embedding-worker'), 'local embedding', () => {
        const index = this.threads.indexOf(thread);
        if (index >= 0) this.threads.splice(index, 1);
      });
      this.threads.push(thread);
      return thread;
    }
    return this.threads.reduce((best, thread) => (thread.pendingCount < best.pendingCount ? thread : best));
  }
}
