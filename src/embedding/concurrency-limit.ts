export type Priority = 'interactive' | 'background';

/**
 * Bounds how many calls to one provider run at once. Waiting `interactive` work (query
 * embeddings, reranking) goes before waiting `background` work (ingestion), so a large upload
 * does not add its whole queue to the latency of a search.
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

  async run<T>(task: () => Promise<T>, priority: Priority = 'background'): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting[priority].push(resolve));
    else this.running += 1;
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  /** Hands the slot straight to the next waiter, so `running` never dips below the limit while work waits. */
  private release(): void {
    const next = this.waiting.interactive.shift() ?? this.waiting.background.shift();
    if (next) next();
    else this.running -= 1;
  }
}
