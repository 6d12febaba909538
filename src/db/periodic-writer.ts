/**
 * Writes that are batched in memory and sent once per interval, before reads that need them, and at
 * shutdown (query events, embedding usage, API-key last use). Writes never overlap, and a failed
 * write does not stop the later ones: its owner keeps what it could not write for the next try.
 */
export class PeriodicWriter {
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.flush().catch(this.onError), this.intervalMs);
    this.timer.unref();
  }

  flush(): Promise<void> {
    this.chain = this.chain.then(this.write, this.write);
    return this.chain;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
