import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';

export interface WalCheckpointsOptions {
  /** A checkpoint is made once the write-ahead log since the last one is this large. */
  maxWalBytes: number;
  intervalMs?: number;
}

const DEFAULT_INTERVAL_MS = 5_000;

/**
 * Checkpoints of the embedded database, made once its write-ahead log since the last one passes
 * `maxWalBytes`. PGlite runs PostgreSQL as one backend with `max_wal_size` 1GB, which no setting
 * changes (its configuration files are not read): left alone it checkpoints only after about half
 * a gigabyte of log, and at each checkpoint it keeps the log it recycles, sized by the distance
 * between checkpoints, so a data directory kept up to a gigabyte of log whatever its data (a 55 MB
 * corpus left 408 MB of log beside 440 MB of tables). Checkpointing sooner keeps that distance,
 * and the log kept with it, small.
 */
export class WalCheckpoints {
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly sql: SqlRunner, private readonly logger: FastifyBaseLogger, private readonly options: WalCheckpointsOptions) {
    this.intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.checkpointIfDue()
        .then(() => undefined, (error: unknown) => this.logger.warn({ err: error }, 'could not checkpoint the embedded database'))
        .finally(() => { this.running = undefined; });
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Makes a checkpoint when the log since the last one has reached `maxWalBytes`; says whether it did. */
  async checkpointIfDue(): Promise<boolean> {
    const [row] = await this.sql<{ bytes: string | number }>(
      'select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (pg_control_checkpoint()).redo_lsn) as bytes',
    );
    const bytes = Number(row?.bytes ?? 0);
    if (bytes < this.options.maxWalBytes) return false;
    const started = performance.now();
    await this.sql('checkpoint');
    this.logger.debug({ wal_bytes: bytes, took_ms: Math.round(performance.now() - started) }, 'checkpointed the embedded database');
    return true;
  }
}
