/**
 * A start brings the schema up to date, running only what the database has not recorded; on an
 * up-to-date database it loads no migration code at all (migrate-to-latest.ts), so the check that
 * decides this must see a database one migration behind.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { openDatabase, type DatabaseOptions } from '../../src/db/database.js';
import { pendingMigrations } from '../../src/db/migrate-to-latest.js';
import { migrationNames } from '../../src/db/migrations/index.js';
import { scratchDatabaseUrl, testBackends } from '../support/test-app.js';

async function databaseOptions(t: Test, backend: string): Promise<DatabaseOptions> {
  if (backend === 'postgresql') return { databaseUrl: await scratchDatabaseUrl(t) };
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-migrate-'));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  return { dataDir: path.join(directory, 'db') };
}

const hasMetadataIndexes = "select count(*)::int as count from pg_indexes where indexname in ('chunks_metadata_index', 'pgvector_embeddings_metadata_index', 'documents_metadata_index')";

for (const backend of testBackends()) {
  t.test(`${backend}: an empty database gets every migration; one a migration behind gets that one at the next start`, async (t) => {
    const options = await databaseOptions(t, backend);
    const fresh = await openDatabase(options);
    const connection = fresh.orm.em.getConnection();
    const recorded = await connection.execute<Array<{ name: string }>>('select name from schema_migrations order by id');
    t.same(recorded.map((row) => row.name), migrationNames, 'every migration ran, in order');
    t.same(await pendingMigrations(fresh.orm), []);

    const latest = migrationNames.slice(-7);
    t.same(latest, ['0021-query-daily-totals', '0022-embedding-cache-age-index', '0023-upload-session-expiry', '0024-query-daily-texts', '0025-query-hourly-totals',
      '0026-query-text-folded-keys', '0027-collection-chunk-totals'], 'this test undoes the seven latest migrations by hand; a new one needs its own undo here');
    await connection.execute('drop function count_chunk_changes cascade');
    await connection.execute('drop table collection_chunk_totals');
    await connection.execute(`
      create or replace function remove_chunks_of_deleted_collections() returns trigger language plpgsql as $$
      begin
        delete from chunks where collection_id = any(array(select id from deleted_collections));
        return null;
      end $$`);
    await connection.execute('drop table query_hourly_totals');
    await connection.execute('drop table query_daily_texts');
    await connection.execute('drop table query_daily_totals');
    await connection.execute('drop index query_events_created_index');
    await connection.execute('drop index embedding_cache_created_index');
    await connection.execute('drop index upload_sessions_open_index');
    await connection.execute('alter table upload_sessions drop column expired');
    await connection.execute('delete from schema_migrations where name in (?, ?, ?, ?, ?, ?, ?)', latest);
    // Events recorded before the migration: its totals start from them.
    const [collectionId, recentCollectionId] = [randomUUID(), randomUUID()];
    for (const [id, name] of [[collectionId, 'asked'], [recentCollectionId, 'asked-lately']]) {
      await connection.execute(
        `insert into collections (id, name, embedding_provider, embedding_model, dimension, chunk_size, chunk_overlap,
           chunk_strategy, default_top_k, default_min_score, default_search_mode, created_at, updated_at)
         values (?, ?, 'local', 'local-hash-384', 384, 800, 100, 'recursive', 10, 0, 'hybrid', now(), now())`, [id, name],
      );
    }
    const hourAgo = new Date(Date.now() - 3_600_000);
    const events = [
      [collectionId, '2026-11-02T23:59:00Z', 3, false, 'lighthouse'], [collectionId, '2026-11-03T00:01:00Z', 0, true, ' lighthouse  beam'],
      [collectionId, '2026-11-03T10:00:00Z', 0, false, 'lighthouse beam'],
      [recentCollectionId, hourAgo.toISOString(), 1, false, 'foghorn'], [recentCollectionId, hourAgo.toISOString(), 1, false, 'foghorn'],
    ] as const;
    for (const [id, at, resultCount, cached, query] of events) {
      await connection.execute(
        `insert into query_events (id, collection_id, query, search_mode, result_count, latency_ms, cached, created_at)
         values (?, ?, ?, 'hybrid', ?, 2.5, ?, ?)`, [randomUUID(), id, query, resultCount, cached, at],
      );
    }
    // Chunks stored before the migration (one of a collection deleted since): its totals start from them.
    const chunks = [[collectionId, null, 'é'.repeat(10)], [collectionId, randomUUID(), 'beam'], [randomUUID(), null, 'gone']] as const;
    for (const [id, documentId, text] of chunks) {
      await connection.execute(
        'insert into chunks (id, collection_id, document_id, chunk_index, text, created_at) values (?, ?, ?, 0, ?, now())', [randomUUID(), id, documentId, text],
      );
    }
    t.same(await pendingMigrations(fresh.orm), latest, 'the check sees the missing migrations');
    await fresh.close();

    const reopened = await openDatabase(options);
    t.teardown(() => reopened.close());
    t.same(await pendingMigrations(reopened.orm), []);
    const [indexes] = await reopened.orm.em.getConnection().execute<Array<{ count: number }>>(hasMetadataIndexes);
    t.equal(indexes!.count, 3, 'the metadata indexes of chunks and vector rows (migration 0018) and of documents are there');
    const [ageIndex] = await reopened.orm.em.getConnection().execute<Array<{ count: number }>>("select count(*)::int as count from pg_indexes where indexname = 'embedding_cache_created_index'");
    t.equal(ageIndex!.count, 1, 'the embedding cache is indexed by age (migration 0022)');
    const [expiredColumn] = await reopened.orm.em.getConnection().execute<Array<{ count: number }>>(
      "select count(*)::int as count from information_schema.columns where table_name = 'upload_sessions' and column_name = 'expired'",
    );
    t.equal(expiredColumn!.count, 1, 'upload sessions say whether they expired (migration 0023)');
    const optionsOf = async (index: string) => String((await reopened.orm.em.getConnection().execute<Array<{ reloptions: string[] | string | null }>>(
      'select reloptions from pg_class where relname = ?', [index],
    ))[0]!.reloptions);
    t.match(await optionsOf('documents_metadata_index'), /gin_pending_list_limit=64/, 'the start ran the missing migration: the documents index, with a short pending list');
    t.match(await optionsOf('chunks_metadata_index'), /gin_pending_list_limit=64/, 'the chunks index keeps a short pending list');
    t.match(await optionsOf('pgvector_embeddings_metadata_index'), /fastupdate=off/, 'the index over vector rows, never vacuumed by the service, keeps no pending entries');
    const totals = await reopened.orm.em.getConnection().execute<Array<Record<string, unknown>>>(
      `select to_char(day, 'YYYY-MM-DD') as day, queries::int, latency_ms_sum, zero_result_queries::int, cached_queries::int
         from query_daily_totals where collection_id = ? order by day`, [collectionId],
    );
    t.same(totals, [
      { day: '2026-11-02', queries: 1, latency_ms_sum: 2.5, zero_result_queries: 0, cached_queries: 0 },
      { day: '2026-11-03', queries: 2, latency_ms_sum: 5, zero_result_queries: 2, cached_queries: 1 },
    ], 'the daily totals start from the events recorded before, by UTC day');
    const texts = await reopened.orm.em.getConnection().execute<Array<Record<string, unknown>>>(
      `select to_char(day, 'YYYY-MM-DD') as day, query_text, queries::int, result_count_sum::int, zero_result_queries::int
         from query_daily_texts where collection_id = ? order by day`, [collectionId],
    );
    t.same(texts, [
      { day: '2026-11-02', query_text: 'lighthouse', queries: 1, result_count_sum: 3, zero_result_queries: 0 },
      { day: '2026-11-03', query_text: 'lighthouse beam', queries: 2, result_count_sum: 0, zero_result_queries: 2 },
    ], 'the daily counts of query texts start from them too (migration 0024), white space made one space');
    const [folded] = await reopened.orm.em.getConnection().execute<Array<{ rows: number; keyed: number }>>(
      'select count(*)::int as rows, count(*) filter (where folded_hash = md5(lower(query_text))::uuid)::int as keyed from query_daily_texts',
    );
    t.same(folded, { rows: 3, keyed: 3 }, 'each text is keyed by its lower case (migration 0026)');
    const hours = await reopened.orm.em.getConnection().execute<Array<Record<string, unknown>>>(
      'select collection_id, extract(epoch from hour)::bigint * 1000 as hour, queries::int from query_hourly_totals',
    );
    t.same(hours.map((row) => ({ ...row, hour: Number(row.hour) })), [{ collection_id: recentCollectionId, hour: Math.floor(hourAgo.getTime() / 3_600_000) * 3_600_000, queries: 2 }],
      'the hourly counts start from the events of the last 25 hours (migration 0025)');
    const chunkTotals = () => reopened.orm.em.getConnection().execute<Array<Record<string, unknown>>>(
      'select collection_id, chunks::int, raw_vectors::int, text_bytes::int from collection_chunk_totals order by collection_id',
    );
    t.same(await chunkTotals(), [{ collection_id: collectionId, chunks: 2, raw_vectors: 1, text_bytes: 24 }],
      'the chunk totals start from the chunks of the collections there are (migration 0027): 20 bytes of é and 4 of beam');
    await reopened.orm.em.getConnection().execute('delete from collections where id = ?', [collectionId]);
    t.same(await chunkTotals(), [], 'and go with their collection');
    const names = await reopened.orm.em.getConnection().execute<Array<{ name: string }>>('select name from schema_migrations');
    t.equal(names.length, migrationNames.length, 'and recorded it once, nothing run twice');
  });
}
