import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';

export interface EmbeddedDatabaseUpkeepOptions {
  /** A checkpoint is made once the write-ahead log since the last one is this large; 0: never. */
  checkpointWalBytes: number;
  /** Between VACUUM rounds; 0: never. */
  vacuumIntervalMs: number;
  /** How often the log's size is looked at (5 s). */
  checkIntervalMs?: number;
  /** The longest a table goes between analyzes, changed or not (10 min). */
  reanalyzeAfterMs?: number;
}

const DEFAULT_CHECK_INTERVAL_MS = 5_000;
const DEFAULT_REANALYZE_AFTER_MS = 10 * 60_000;

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
 *
 * Analyze: without autovacuum the planner had no statistics at all, and took a collection of
 * 191,686 chunks for about 950 rows. Reading it by key pages (the in-process indexes' load at a
 * start) then sorted every remaining row on disk for each page of 5,000: loading its vectors took
 * 21.7 s and its BM25 index 12.5 s, against 5.2 and 5.7 s once analyzed (0.3 s a table). A table
 * is analyzed with its vacuum at the first round of each process, then once its row count (as the
 * last vacuum found it) has moved from the count at its last analyze by more than autovacuum's
 * default threshold, 50 + 10 % of its rows, and at least every `reanalyzeAfterMs` (10 min) in any
 * case: PGlite does not count the rows statements change (`n_mod_since_analyze` stays 0), and
 * deleting one collection's rows while adding as many of another's leaves the count as it was.
 */
export class EmbeddedDatabaseUpkeep {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private ticks = 0;
  /** Set when a round is due, cleared when it starts: a round due while other upkeep runs is not lost. */
  private vacuumDue = false;
  private readonly failing = new Set<'checkpoint' | 'vacuum'>();
  /** Each table's row count when this process last analyzed it, and when. */
  private readonly analyzed = new Map<string, { rows: number; at: number }>();

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

  private analyzeDue(table: string, rows: number): boolean {
    const last = this.analyzed.get(table);
    return last === undefined
      || Math.abs(rows - last.rows) > 50 + 0.1 * last.rows
      || performance.now() - last.at >= (this.options.reanalyzeAfterMs ?? DEFAULT_REANALYZE_AFTER_MS);
  }

  private async vacuumTables(): Promise<void> {
    const started = performance.now();
    // regclass prints each name quoted where it needs to be.
    const tables = await this.sql<{ name: string; rows: string | number }>(
      "select oid::regclass::text as name, greatest(reltuples, 0) as rows from pg_class where relkind = 'r' and relnamespace = 'public'::regnamespace",
    );
    // The slowest table is named: a round after a large deletion holds the one connection for
    // seconds, each table in one statement, and which table does is what a fix needs to know.
    let slowestTable = '';
    let slowestMs = -1;
    let analyzedTables = 0;
    for (const { name, rows } of tables) {
      const analyze = this.analyzeDue(name, Number(rows));
      const tableStarted = performance.now();
      await this.sql(`vacuum ${analyze ? '(analyze) ' : ''}${name}`);
      if (analyze) {
        this.analyzed.set(name, { rows: Number(rows), at: performance.now() });
        analyzedTables += 1;
      }
      const tookMs = Math.round(performance.now() - tableStarted);
      if (tookMs > slowestMs) [slowestTable, slowestMs] = [name, tookMs];
    }
    this.logger.debug({
      tables: tables.length, analyzed_tables: analyzedTables, took_ms: Math.round(performance.now() - started), slowest_table: slowestTable, slowest_table_ms: slowestMs,
    }, 'vacuumed the embedded database');
  }
}
