/**
 * Writes that are batched in memory and sent once per interval, before reads that need them, and at
 * shutdown (query events, embedding usage, API-key last use). Writes never overlap, and a failed
 * write does not stop the later ones: the subclass keeps what it could not write for the next try.
 */
export abstract class PeriodicWriter {
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly intervalMs: number, private readonly onError: (error: unknown) => void) {}

  /** Sends what was batched since the last write; throws when the database refused it. */
  protected abstract write(): Promise<void>;

  start(): void {
    this.timer ??= setInterval(() => void this.flush().catch(this.onError), this.intervalMs);
    this.timer.unref();
  }

  flush(): Promise<void> {
    const write = () => this.write();
    this.chain = this.chain.then(write, write);
    return this.chain;
  }

  /**
   * Writes what is pending before a read that counts it. A failed write is reported, not thrown:
   * the read then misses the last second instead of failing because of a write.
   */
  flushBeforeRead(): Promise<void> {
    return this.flush().catch(this.onError);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
