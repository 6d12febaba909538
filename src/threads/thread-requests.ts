import type { Transferable, Worker } from 'node:worker_threads';

/** What a worker posts back: the result of request `id`, or the fields of the error it threw. */
export type ThreadAnswer = { id: number; result: unknown } | { id: number; error: Record<string, unknown> };

/** Request id 0 is the worker's "ready" message: it posts `{ id: 0, result }` once it can take requests. */
export const READY_ID = 0;

/** An error's message and its plain fields (a `code`, say), for posting. */
export function errorFields(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const fields: Record<string, unknown> = { message: error.message };
  for (const [name, value] of Object.entries(error)) if (['string', 'number', 'boolean'].includes(typeof value)) fields[name] = value;
  return fields;
}

interface Pending {
  resolve(result: unknown): void;
  reject(error: Error): void;
}

/**
 * Requests to a worker thread, answered in any order by id. The thread keeps the process alive only
 * while a request is out. When it dies, every open and later request fails with the reason.
 */
export class ThreadRequests {
  private readonly pending = new Map<number, Pending>();
  private nextId = READY_ID + 1;
  private stoppedBy: Error | undefined;

  /** `onStop` hears once why the thread is gone when it failed or exited (not after `terminate`). */
  constructor(private readonly worker: Worker, label: string, onStop?: (reason: Error) => void) {
    // The ready message counts as pending, so a thread still starting looks busy to a caller choosing one.
    this.pending.set(READY_ID, { resolve: () => undefined, reject: () => undefined });
    worker.on('message', (answer: ThreadAnswer) => {
      const request = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (this.pending.size === 0) worker.unref();
      if ('error' in answer) request?.reject(Object.assign(new Error(String(answer.error.message)), answer.error));
      else request?.resolve(answer.result);
    });
    const stop = (error: Error) => {
      if (!this.stoppedBy) onStop?.(error);
      this.stoppedBy ??= error;
      for (const request of this.pending.values()) request.reject(error);
      this.pending.clear();
    };
    // The code says why (ERR_WORKER_OUT_OF_MEMORY: the thread reached its resourceLimits).
    worker.on('error', (error: Error & { code?: string }) => stop(Object.assign(new Error(`the ${label} thread failed: ${error.message}`), { code: error.code })));
    worker.on('exit', (code) => stop(new Error(`the ${label} thread exited with code ${code}`)));
  }

  get stopped(): boolean {
    return this.stoppedBy !== undefined;
  }

  /** Requests not answered yet (the ready message counts until it arrives). */
  get pendingCount(): number {
    return this.pending.size;
  }

  request<T>(message: Record<string, unknown>, transfer: Transferable[] = []): Promise<T> {
    if (this.stoppedBy) return Promise.reject(this.stoppedBy);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve: resolve as (result: unknown) => void, reject });
      this.worker.postMessage({ ...message, id }, transfer);
    });
  }

  /** Ends the thread; later requests fail with `reason`. */
  async terminate(reason: string): Promise<void> {
    this.stoppedBy ??= new Error(reason);
    await this.worker.terminate();
  }
}
