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
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../../src/threads/module-worker.js';
import type { EmbeddingAnswer, EmbeddingTask } from './embedding-worker.js';

interface PendingBatch {
  resolve(matrix: Float64Array): void;
  reject(error: Error): void;
}

class EmbeddingThread {
  readonly pending = new Map<number, PendingBatch>();
  readonly worker: Worker;

  constructor(onExit: (thread: EmbeddingThread) => void) {
    this.worker = startModuleWorker(import.meta.url, 'embedding-worker');
    this.worker.on('message', (answer: EmbeddingAnswer) => {
      const batch = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (this.pending.size === 0) this.worker.unref();
      if ('error' in answer) batch?.reject(new Error(`local embedding failed: ${answer.error}`));
      else batch?.resolve(answer.matrix);
    });
    const failAll = (error: Error) => {
      for (const batch of this.pending.values()) batch.reject(error);
      this.pending.clear();
      onExit(this);
    };
    this.worker.on('error', failAll);
    this.worker.on('exit', (code) => failAll(new Error(`local embedding thread exited with code ${code}`)));
    // After the listeners: attaching a 'message' listener refs the thread's port again.
    this.worker.unref();
  }

  /** The thread keeps the process alive only while it owes an answer. */
  submit(task: EmbeddingTask, batch: PendingBatch): void {
    if (this.pending.size === 0) this.worker.ref();
    this.pending.set(task.id, batch);
    this.worker.postMessage(task);
  }
}

export class EmbeddingThreads {
  private readonly threads: EmbeddingThread[] = [];
  private nextId = 0;

  constructor(private readonly size = Math.max(1, Math.min(4, os.availableParallelism() - 1))) {}

  /** `texts` embedded row-major into one matrix, on the least busy thread. */
  embed(texts: string[], dimension: number): Promise<Float64Array> {
    const thread = this.leastBusy();
    const id = this.nextId++;
    return new Promise((resolve, reject) => thread.submit({ id, texts, dimension }, { resolve, reject }));
  }

  private leastBusy(): EmbeddingThread {
    if (this.threads.length < this.size) {
      const thread = new EmbeddingThread((gone) => {
        const index = this.threads.indexOf(gone);
        if (index >= 0) this.threads.splice(index, 1);
      });
      this.threads.push(thread);
      return thread;
    }
    return this.threads.reduce((best, thread) => (thread.pending.size < best.pending.size ? thread : best));
  }
}
