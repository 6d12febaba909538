import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Records `last_used_at` without a database write per request: uses are collected in memory and
 * written at most once a second (and before any read of the keys, and at shutdown). At the
 * 5,000 req/s target one UPDATE per request would be most of the work.
 */
export class ApiKeyUsageTracker {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly fork: () => EntityManager,
    private readonly intervalMs = 1000,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.flush().catch(this.onError), this.intervalMs);
    this.timer.unref();
  }

  markUsed(keyId: string, at: Date): void {
    this.pending.set(keyId, at);
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const connection = this.fork().getConnection();
    for (const [keyId, at] of batch) {
      await connection.execute(
        'update api_keys set last_used_at = greatest(coalesce(last_used_at, ?), ?) where id = ?',
        [at, at, keyId],
      );
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
