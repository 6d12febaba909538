import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';

export interface EmbeddedDatabaseUpkeepOptions {
  /** A checkpoint is made once the write-ahead log since the last one is this large; 0: never. */
  checkpointWalBytes: number;
  /** Between VACUUM rounds; 0: never. */
  vacuumIntervalMs: number;
  /** How often the log's size is looked at (5 s). */
  checkIntervalMs?: number;
}

const DEFAULT_CHECK_INTERVAL_MS = 5_000;

/**
 * What PostgreSQL's background processes do for a server and PGlite, one backend in the service's
 * process, does not: checkpoints by the log's size and vacuuming.
 *
 * Checkpoints: PGlite's `max_wal_size` is 1GB and no setting reaches it (its configuration files are
 * not read), so it checkpointed only after about half a gigabyte of log and kept the log it recycled,
 * sized by the distance between checkpoints: ingesting 51 MB of text left 482 MB of log beside 492
 * MB of tables (bench/documents/wal-size.ts). A checkpoint every `checkpointWalBytes` keeps both small.
 *
 * Vacuum: without autovacuum, the space of deleted rows was never reused: truncating a collection
 * and ingesting the same 500 files again grew the tables by 100 MB a round. Each table is vacuumed
 * in a statement of its own, so queries waiting for the one connection go between them; pages
 * vacuumed before and unchanged since are skipped (a round over an unchanged database of 100k
 * chunks took 25-60 ms).
 */
export class EmbeddedDatabaseUpkeep {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private ticks = 0;
  /** Set when a round is due, cleared when it starts: a round due while other upkeep runs is not lost. */
  private vacuumDue = false;
  private readonly failing = new Set<'checkpoint' | 'vacuum'>();

  constructor(private readonly sql: SqlRunner, private readonly logger: FastifyBaseLogger, private readonly options: EmbeddedDatabaseUpkeepOptions) {}

  start(): void {
    if (this.timer) return;
    const { vacuumIntervalMs, checkIntervalMs = DEFAULT_CHECK_INTERVAL_MS } = this.options;
    const tickMs = vacuumIntervalMs > 0 ? Math.min(checkIntervalMs, vacuumIntervalMs) : checkIntervalMs;
    const vacuumEveryTicks = Math.max(1, Math.round(vacuumIntervalMs / tickMs));
    this.timer = setInterval(() => {
      this.ticks += 1;
      if (vacuumIntervalMs > 0 && this.ticks % vacuumEveryTicks === 0) this.vacuumDue = true;
      this.running ??= this.keepUp().finally(() => { this.running = undefined; });
    }, tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private async keepUp(): Promise<void> {
    if (this.options.checkpointWalBytes > 0) await this.attempt('checkpoint', () => this.checkpointIfDue());
    if (this.vacuumDue) {
      this.vacuumDue = false;
      await this.attempt('vacuum', () => this.vacuumTables());
    }
  }

  /**
   * Runs one duty, logging its failure as a warn line the first time only: a duty that keeps
   * failing (a full disk) would otherwise write one every 5 s. Its next success says it works again.
   */
  private async attempt(duty: 'checkpoint' | 'vacuum', work: () => Promise<void>): Promise<void> {
    try {
      await work();
      if (this.failing.delete(duty)) this.logger.info({ duty }, `the embedded database's ${duty} works again`);
    } catch (error) {
      if (this.failing.has(duty)) this.logger.debug({ err: error, duty }, `the embedded database's ${duty} failed again`);
      else this.logger.warn({ err: error, duty }, `the embedded database's ${duty} failed; retried (further failures are logged at debug level)`);
      this.failing.add(duty);
    }
  }

  /** Makes a checkpoint when the log since the last one has reached `checkpointWalBytes`. */
  private async checkpointIfDue(): Promise<void> {
    const [row] = await this.sql<{ bytes: string | number }>(
      'select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (pg_control_checkpoint()).redo_lsn) as bytes',
    );
    const bytes = Number(row?.bytes ?? 0);
    if (bytes < this.options.checkpointWalBytes) return;
    const started = performance.now();
    await this.sql('checkpoint');
    this.logger.debug({ wal_bytes: bytes, took_ms: Math.round(performance.now() - started) }, 'checkpointed the embedded database');
  }

  private async vacuumTables(): Promise<void> {
    const started = performance.now();
    // regclass prints each name quoted where it needs to be.
    const tables = await this.sql<{ name: string }>("select oid::regclass::text as name from pg_class where relkind = 'r' and relnamespace = 'public'::regnamespace");
    // The slowest table is named: a round after a large deletion holds the one connection for
    // seconds, each table in one statement, and which table does is what a fix needs to know.
    let slowestTable = '';
    let slowestMs = -1;
    for (const { name } of tables) {
      const tableStarted = performance.now();
      await this.sql(`vacuum ${name}`);
      const tookMs = Math.round(performance.now() - tableStarted);
      if (tookMs > slowestMs) [slowestTable, slowestMs] = [name, tookMs];
    }
    this.logger.debug({
      tables: tables.length, took_ms: Math.round(performance.now() - started), slowest_table: slowestTable, slowest_table_ms: slowestMs,
    }, 'vacuumed the embedded database');
  }
}
