export type Priority = 'interactive' | 'background';

/** No slot came free before the caller's deadline. */
export class NoFreeSlotError extends Error {
  constructor(readonly limit: number) {
    super(`no free slot: ${limit} in use`);
  }
}

/**
 * Bounds how many tasks run at once: calls to one provider, removals of stored files. Waiting
 * `interactive` work (query embeddings, reranking) goes before waiting `background` work
 * (ingestion), so a large upload does not add its whole queue to the latency of a search.
 */
export class ConcurrencyLimit {
  private running = 0;
  private readonly waiting: Record<Priority, Array<() => void>> = { interactive: [], background: [] };

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency limit must be a positive integer, got ${limit}`);
  }

  get inFlight(): number {
    return this.running;
  }

  /** Runs `task` once a slot is free; waiting past `deadline` (epoch ms) rejects with NoFreeSlotError. */
  async run<T>(task: () => Promise<T>, priority: Priority = 'background', deadline?: number): Promise<T> {
    if (this.running >= this.limit) await this.slot(priority, deadline);
    else this.running += 1;
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  private slot(priority: Priority, deadline: number | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const queue = this.waiting[priority];
      const take = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = deadline === undefined ? undefined : setTimeout(() => {
        queue.splice(queue.indexOf(take), 1);
        reject(new NoFreeSlotError(this.limit));
      }, Math.max(0, deadline - Date.now()));
      queue.push(take);
    });
  }

  /** Hands the slot straight to the next waiter, so `running` never dips below the limit while work waits. */
  private release(): void {
    const next = this.waiting.interactive.shift() ?? this.waiting.background.shift();
    if (next) next();
    else this.running -= 1;
  }
}
