/**
 * What PostgreSQL's planner expects of a statement, and how many chunks a collection holds, for
 * choosing how to run a filtered search (the pgvector store).
 */
import type { SqlRunner } from '../plugins.js';
import { QueryCache } from '../search/query-cache.js';

type ExplainRow = { 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> | string };

/** The planner's estimate of the rows a statement returns. */
export async function estimatedRows(sql: SqlRunner, statement: string, params: unknown[]): Promise<number> {
  const [row] = await sql<ExplainRow>(`explain (format json) ${statement}`, params);
  const plan = typeof row!['QUERY PLAN'] === 'string' ? JSON.parse(row!['QUERY PLAN']) as Exclude<ExplainRow['QUERY PLAN'], string> : row!['QUERY PLAN'];
  return Number(plan[0]!.Plan['Plan Rows']);
}

/** Rows counted exactly up to this many (an index-only count, 5-10 ms at that size). */
const countedRowsMax = 100_000;

/**
 * A collection's chunks, read at most once a minute: counted up to `countedRowsMax`, beyond that the
 * planner's estimate, which has statistics by the time a collection is that large (without them it
 * guessed 5 rows for 3,000). Chunks rather than vectors: each vector is a chunk's, and `chunks` is
 * vacuumed (postgres-table-upkeep.ts), so the count reads its index alone.
 */
export class CollectionRowCounts {
  private readonly known = new Map<string, { rows: number; at: number }>();

  constructor(private readonly sql: SqlRunner, private readonly maxAgeMs = 60_000) {}

  async rows(collectionId: string): Promise<number> {
    const known = this.known.get(collectionId);
    if (known && performance.now() - known.at < this.maxAgeMs) return known.rows;
    const [counted] = await this.sql<{ rows: number | string }>(
      `select count(*) as rows from (select 1 from chunks where collection_id = ?::uuid limit ?) as capped`, [collectionId, countedRowsMax],
    );
    let rows = Number(counted!.rows);
    if (rows >= countedRowsMax) rows = Math.max(rows, await estimatedRows(this.sql, 'select 1 from chunks where collection_id = ?::uuid', [collectionId]));
    this.known.set(collectionId, { rows, at: performance.now() });
    return rows;
  }

  forget(collectionId: string): void {
    this.known.delete(collectionId);
  }
}

/**
 * Whether ANALYZE has gathered statistics of a column (pg_stats), looked up at most once a minute.
 * Without them the planner's estimates are defaults: it expected 1 row of 3,000 to pass a filter
 * half of them passed.
 */
export class ColumnStatistics {
  private known: { present: boolean; at: number } | null = null;

  constructor(private readonly sql: SqlRunner, private readonly table: string, private readonly column: string, private readonly maxAgeMs = 60_000) {}

  async present(): Promise<boolean> {
    if (this.known && (this.known.present || performance.now() - this.known.at < this.maxAgeMs)) return this.known.present;
    const rows = await this.sql('select 1 from pg_stats where schemaname = current_schema() and tablename = ? and attname = ?', [this.table, this.column]);
    this.known = { present: rows.length > 0, at: performance.now() };
    return this.known.present;
  }
}

/**
 * The planner's estimates of a collection's statements, each kept for a minute: asking for one
 * (`explain`) cost about 0.5 ms of every filtered semantic search on PostgreSQL, and the answer moves
 * only with ANALYZE, which runs far less often. Kept in a QueryCache bounded at `maxEntries` (least
 * recently used forgotten first), so filters with ever new values (ids, timestamps) cannot grow it.
 */
export class CollectionEstimates {
  private readonly known: QueryCache<number>;
  private readonly maxAgeSeconds: number;

  constructor(private readonly sql: SqlRunner, maxAgeMs = 60_000, maxEntries = 1_000) {
    this.known = new QueryCache<number>({ maxEntries, maxBytes: Number.MAX_SAFE_INTEGER, sizeOf: () => 0 });
    this.maxAgeSeconds = maxAgeMs / 1000;
  }

  async rows(collectionId: string, statement: string, params: unknown[]): Promise<number> {
    const key = `${collectionId}\n${statement}\n${JSON.stringify(params)}`;
    const known = this.known.get(key, this.maxAgeSeconds);
    if (known !== undefined) return known;
    const rows = await estimatedRows(this.sql, statement, params);
    this.known.set(key, rows, this.maxAgeSeconds);
    return rows;
  }

  forget(collectionId: string): void {
    this.known.removeWhere((key) => key.startsWith(`${collectionId}\n`));
  }
}
