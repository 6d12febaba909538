/**
 * On PostgreSQL, tables that autovacuum leaves alone are analyzed by the service once enough of
 * their rows changed, so the planner has statistics (postgres-statistics-upkeep.ts). The tables'
 * `autovacuum_enabled` is turned off here, so the test means the same on a server whose
 * autovacuum runs and on one where it is off (this workplace's).
 */
import t from 'tap';
import type { SqlRunner } from '../../src/plugins.js';
import { multipartUpload, setupAdmin, buildTestApp, waitForIngestion } from '../support/test-app.js';

/** 240 short paragraphs, two to a chunk of 100 characters: well over autovacuum's 50-row threshold. */
const MANY_PARAGRAPHS = Array.from({ length: 240 }, (_, index) => `Paragraph ${index} tells of harbour number ${index}.`).join('\n\n');

async function lastAnalyzed(sql: SqlRunner, table: string): Promise<string | null> {
  const [row] = await sql<{ last_analyze: string | null }>('select last_analyze from pg_stat_user_tables where relid = ?::regclass', [table]);
  return row?.last_analyze ?? null;
}

async function ingestManyChunks(intervalMs: number, t: { teardown(fn: () => Promise<void>): void }) {
  const ctx = await buildTestApp('postgresql', { postgresAnalyzeIntervalMs: intervalMs });
  t.teardown(() => ctx.close());
  const sql = ctx.services.sql;
  await sql('alter table chunks set (autovacuum_enabled = false)');
  const admin = { cookie: await setupAdmin(ctx.app) };
  const created = await ctx.app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'harbours', chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' } });
  if (created.statusCode !== 201) throw new Error(created.body);
  const form = multipartUpload([{ filename: 'harbours.txt', content: MANY_PARAGRAPHS, contentType: 'text/plain' }]);
  const uploaded = await ctx.app.inject({ method: 'POST', url: '/v1/collections/harbours/documents', headers: { ...admin, ...form.headers }, payload: form.payload });
  if (uploaded.statusCode !== 202) throw new Error(uploaded.body);
  const [document] = await waitForIngestion(ctx.app, 'harbours', admin);
  return { sql, chunkCount: document!.chunk_count };
}

if (!process.env.TEST_DATABASE_URL) {
  t.pass('PostgreSQL only (TEST_DATABASE_URL unset): the embedded database is vacuumed by its own upkeep');
} else {
  t.test('a table autovacuum leaves alone is analyzed once enough of its rows changed', async (t) => {
    const { sql, chunkCount } = await ingestManyChunks(100, t);
    t.ok(chunkCount > 100, `${chunkCount} chunks written`);
    for (let waited = 0; (await lastAnalyzed(sql, 'chunks')) === null; waited += 50) {
      if (waited > 15_000) {
        t.fail('chunks was never analyzed');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [stats] = await sql<{ n_distinct: number }>("select n_distinct from pg_stats where tablename = 'chunks' and attname = 'chunk_index' and schemaname = current_schema()");
    t.ok(stats, 'the planner now has statistics of its columns');
  });

  t.test('with POSTGRES_ANALYZE_INTERVAL_S=0 the service leaves it alone', async (t) => {
    const { sql } = await ingestManyChunks(0, t);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    t.equal(await lastAnalyzed(sql, 'chunks'), null, 'not analyzed');
  });
}
