import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';

/**
 * PostgreSQL plans each statement from its tables' statistics, which autovacuum keeps by analyzing
 * a table once enough of its rows changed. A server may run with autovacuum off (this workplace's
 * machines do; some operators turn it off around bulk loads), and then the service's tables have
 * none, however large they grow. Without them the planner guesses: at 50,000 chunks, the lookup
 * of ten documents' chunks for a scoped query read the whole chunks table through a hash join
 * (28 ms) where the index answers in well under a millisecond.
 *
 * So the service analyzes, in rounds, each of its tables that autovacuum leaves alone (the server's
 * `autovacuum` off, or the table's `autovacuum_enabled` false) once its rows changed since the last
 * analyze by autovacuum's own rule: more than `autovacuum_analyze_threshold` rows plus
 * `autovacuum_analyze_scale_factor` of the table. Where autovacuum runs, a round finds nothing.
 * ANALYZE reads a sample of each table and blocks neither reads nor writes.
 */
export class PostgresStatisticsUpkeep {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failing = false;

  constructor(private readonly sql: SqlRunner, private readonly logger: FastifyBaseLogger, private readonly intervalMs: number) {}

  start(): void {
    if (this.timer || this.intervalMs <= 0) return;
    this.timer = setInterval(() => {
      this.running ??= this.analyzeRound().finally(() => { this.running = undefined; });
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One round; a failure is logged as a warn line the first time only, and its next success says it works again. */
  private async analyzeRound(): Promise<void> {
    try {
      await this.analyzeChangedTables();
      if (this.failing) this.logger.info('analyzing the database tables works again');
      this.failing = false;
    } catch (error) {
      if (this.failing) this.logger.debug({ err: error }, 'analyzing the database tables failed again');
      else this.logger.warn({ err: error }, 'analyzing the database tables failed; retried each round (further failures are logged at debug level)');
      this.failing = true;
    }
  }

  private async analyzeChangedTables(): Promise<void> {
    // regclass prints each name quoted where it needs to be.
    const tables = await this.sql<{ name: string; changed: string | number }>(
      `select s.relid::regclass::text as name, s.n_mod_since_analyze as changed
         from pg_stat_user_tables s join pg_class c on c.oid = s.relid
        where s.schemaname = current_schema()
          and (current_setting('autovacuum') = 'off'
               or exists (select 1 from unnest(c.reloptions) option where option ~* '^autovacuum_enabled=(false|off|no|0)$'))
          and s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                                      + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)`,
    );
    for (const { name, changed } of tables) {
      const started = performance.now();
      await this.sql(`analyze ${name}`);
      this.logger.debug({ table: name, changed_rows: Number(changed), took_ms: Math.round(performance.now() - started) }, 'analyzed a table autovacuum leaves alone');
    }
  }
}
