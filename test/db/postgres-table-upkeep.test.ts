/**
 * On PostgreSQL, tables that autovacuum leaves alone are analyzed and vacuumed by the service once
 * enough of their rows changed, by autovacuum's own rules (postgres-table-upkeep.ts), except that a
 * table with HNSW indexes is not vacuumed; `chunks`, with its GIN index over metadata (migration
 * 0018), is. The tables' `autovacuum_enabled` is turned off here, so the test means the same on a
 * server whose autovacuum runs and on one where it is off (this workplace's).
 */
import t from 'tap';
import type { SqlRunner } from '../../src/plugins.js';
import { multipartUpload, setupAdmin, buildTestApp, waitForIngestion } from '../support/test-app.js';

/** 240 short paragraphs, two to a chunk of 100 characters: well over autovacuum's 50-row thresholds. */
const MANY_PARAGRAPHS = Array.from({ length: 240 }, (_, index) => `Paragraph ${index} tells of harbour number ${index}.`).join('\n\n');

type Upkept = 'last_analyze' | 'last_vacuum';

async function lastDone(sql: SqlRunner, table: string, column: Upkept): Promise<string | null> {
  const [row] = await sql<Record<Upkept, string | null>>(`select ${column} from pg_stat_user_tables where relid = ?::regclass`, [table]);
  return row?.[column] ?? null;
}

async function eventually(check: () => Promise<boolean>): Promise<boolean> {
  for (let waited = 0; waited <= 15_000; waited += 50) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** Waits until `column` is set and differs from `before`. */
async function waitFor(sql: SqlRunner, table: string, column: Upkept, before: string | null = null): Promise<boolean> {
  return eventually(async () => {
    const done = await lastDone(sql, table, column);
    return done !== null && done !== before;
  });
}

/**
 * PostgreSQL reports an ANALYZE to the statistics views before the transaction that writes
 * pg_statistic commits, so `last_analyze` can be set a moment before the planner's statistics show.
 */
async function hasColumnStatistics(sql: SqlRunner, table: string, column: string): Promise<boolean> {
  const rows = await sql('select 1 from pg_stats where tablename = ? and attname = ? and schemaname = current_schema()', [table, column]);
  return rows.length > 0;
}

async function ingestManyChunks(intervalMs: number, t: { teardown(fn: () => Promise<void>): void }) {
  const ctx = await buildTestApp('postgresql', { postgresUpkeepIntervalMs: intervalMs });
  t.teardown(() => ctx.close());
  const sql = ctx.services.sql;
  await sql('alter table chunks set (autovacuum_enabled = false)');
  await sql('alter table pgvector_embeddings set (autovacuum_enabled = false)');
  const admin = { cookie: await setupAdmin(ctx.app) };
  const created = await ctx.app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'harbours', chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' } });
  if (created.statusCode !== 201) throw new Error(created.body);
  const form = multipartUpload([{ filename: 'harbours.txt', content: MANY_PARAGRAPHS, contentType: 'text/plain' }]);
  const uploaded = await ctx.app.inject({ method: 'POST', url: '/v1/collections/harbours/documents', headers: { ...admin, ...form.headers }, payload: form.payload });
  if (uploaded.statusCode !== 202) throw new Error(uploaded.body);
  const [document] = await waitForIngestion(ctx.app, 'harbours', admin);
  return { ...ctx, sql, admin, document: document! };
}

if (!process.env.TEST_DATABASE_URL) {
  t.pass('PostgreSQL only (TEST_DATABASE_URL unset): the embedded database is vacuumed by its own upkeep');
} else {
  t.test('a table autovacuum leaves alone is analyzed once enough rows changed, and vacuumed once enough died', async (t) => {
    const { app, sql, admin, document } = await ingestManyChunks(100, t);
    t.ok(document.chunk_count > 100, `${document.chunk_count} chunks written`);
    t.ok(await waitFor(sql, 'chunks', 'last_analyze'), 'chunks was analyzed');
    t.ok(await eventually(() => hasColumnStatistics(sql, 'chunks', 'chunk_index')), 'the planner now has statistics of its columns');
    t.equal(await lastDone(sql, 'chunks', 'last_vacuum'), null, `${document.chunk_count} inserted rows are below the insert threshold (1,000): not vacuumed yet`);

    t.ok(await waitFor(sql, 'pgvector_embeddings', 'last_analyze'), 'the vector table was analyzed too');
    const vectorsAnalyzed = await lastDone(sql, 'pgvector_embeddings', 'last_analyze');

    const deleted = await app.inject({ method: 'DELETE', url: `/v1/collections/harbours/documents/${document.id}`, headers: admin });
    t.equal(deleted.statusCode, 204, deleted.body);
    t.ok(await waitFor(sql, 'chunks', 'last_vacuum'), 'once the document\'s chunks were deleted, chunks was vacuumed');
    t.ok(await waitFor(sql, 'pgvector_embeddings', 'last_analyze', vectorsAnalyzed), 'the vector table, its rows deleted as well, was analyzed again');
    t.equal(await lastDone(sql, 'pgvector_embeddings', 'last_vacuum'), null, 'but, holding HNSW indexes, not vacuumed');
  });

  t.test('with POSTGRES_UPKEEP_INTERVAL_S=0 the service leaves it alone', async (t) => {
    const { sql } = await ingestManyChunks(0, t);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    t.equal(await lastDone(sql, 'chunks', 'last_analyze'), null, 'not analyzed');
    t.equal(await lastDone(sql, 'chunks', 'last_vacuum'), null, 'not vacuumed');
  });
}
