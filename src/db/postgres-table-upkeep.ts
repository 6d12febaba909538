import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../concurrency/periodic-rounds.js';
import type { SqlRunner } from '../plugins.js';

/**
 * What autovacuum does for the service's tables, on a PostgreSQL server where it does not run
 * (this workplace's machines have it off; some operators turn it off around bulk loads):
 *
 * - ANALYZE: the planner's statistics. Without them it guesses: at 50,000 chunks, the lookup of
 *   ten documents' chunks for a scoped query read the whole chunks table through a hash join
 *   (28 ms; 66-98 ms at 100k) where the index answers in about a millisecond.
 * - VACUUM: besides reclaiming the rows that status updates and deletes leave dead, it marks pages
 *   all-visible, which is what lets an index-only scan skip the table. BM25 reads postings through
 *   an index-only scan, and with no vacuum ever every posting was also fetched from the table: a
 *   query matching 34,537 postings at 100k chunks took 600-690 ms, then 102-118 ms vacuumed.
 *
 * Each round takes the tables autovacuum leaves alone (the server's `autovacuum` off, or the
 * table's `autovacuum_enabled` false) that are due by autovacuum's own rules and settings: vacuum
 * when dead rows or rows inserted since the last vacuum pass their threshold plus scale factor of
 * the table, analyze when rows changed since the last analyze do. Where autovacuum runs, a round
 * finds nothing. Neither blocks reads or writes; SKIP_LOCKED passes over a table whose lock another
 * maintenance or index build holds, till the next round. Replicas on one database each run rounds
 * without coordinating: one replica's vacuum passes over a table another's is vacuuming, and a
 * table vacuumed or analyzed is no longer due, so a round after another's finds little to do. At 100k chunks a vacuum of an insert-only
 * table took 0.3-0.8 s. A table with a pgvector index (the pgvector store's, with one HNSW index per
 * collection) is analyzed but never vacuumed here (see the statement).
 */
export class PostgresTableUpkeep {
  private readonly rounds: PeriodicRounds;

  constructor(private readonly sql: SqlRunner, private readonly logger: FastifyBaseLogger, intervalMs: number) {
    this.rounds = new PeriodicRounds(() => this.keepUpDueTables(), { intervalMs, logger, work: 'vacuuming and analyzing the database tables' });
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }

  private async keepUpDueTables(): Promise<void> {
    const setting = (name: string) => `current_setting('${name}')::float8`;
    // regclass prints each name quoted where it needs to be.
    const tables = await this.sql<{ name: string; vacuum_due: boolean; analyze_due: boolean }>(
      `select name, vacuum_due, analyze_due from (
         select s.relid::regclass::text as name,
                -- Only tables without a pgvector index: vacuuming pgvector's HNSW graphs after large
                -- deletions can take minutes, and a manual vacuum, unlike autovacuum, does not give
                -- way to a collection's index build waiting for its lock. GIN indexes (chunk metadata,
                -- migration 0018) are vacuumed: a vacuum also merges their lists of pending entries.
                not exists (select 1 from pg_index i join pg_class index_class on index_class.oid = i.indexrelid
                              join pg_am method on method.oid = index_class.relam
                             where i.indrelid = c.oid and method.amname in ('hnsw', 'ivfflat'))
                and (s.n_dead_tup > ${setting('autovacuum_vacuum_threshold')} + ${setting('autovacuum_vacuum_scale_factor')} * greatest(c.reltuples, 0)
                  or s.n_ins_since_vacuum > ${setting('autovacuum_vacuum_insert_threshold')} + ${setting('autovacuum_vacuum_insert_scale_factor')} * greatest(c.reltuples, 0))
                  as vacuum_due,
                s.n_mod_since_analyze > ${setting('autovacuum_analyze_threshold')} + ${setting('autovacuum_analyze_scale_factor')} * greatest(c.reltuples, 0)
                  as analyze_due
           from pg_stat_user_tables s join pg_class c on c.oid = s.relid
          where s.schemaname = current_schema()
            and (current_setting('autovacuum') = 'off'
                 or exists (select 1 from unnest(c.reloptions) option where option ~* '^autovacuum_enabled=(false|off|no|0)$'))
       ) due where vacuum_due or analyze_due`,
    );
    for (const { name, vacuum_due: vacuum, analyze_due: analyze } of tables) {
      const started = performance.now();
      if (vacuum) await this.sql(`vacuum (skip_locked${analyze ? ', analyze' : ''}) ${name}`);
      else await this.sql(`analyze (skip_locked) ${name}`);
      this.logger.debug({ table: name, vacuum, analyze, took_ms: Math.round(performance.now() - started) }, 'kept up a table autovacuum leaves alone');
    }
  }
}
