/**
 * A start brings the schema up to date, running only what the database has not recorded; on an
 * up-to-date database it loads no migration code at all (migrate-to-latest.ts), so the check that
 * decides this must see a database one migration behind.
 */
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

    const latest = migrationNames.at(-1)!;
    t.equal(latest, '0020-document-metadata-index', 'this test undoes the latest migration by hand; a new one needs its own undo here');
    await connection.execute('drop index documents_metadata_index');
    await connection.execute('delete from schema_migrations where name = ?', [latest]);
    t.same(await pendingMigrations(fresh.orm), [latest], 'the check sees the missing migration');
    await fresh.close();

    const reopened = await openDatabase(options);
    t.teardown(() => reopened.close());
    t.same(await pendingMigrations(reopened.orm), []);
    const [indexes] = await reopened.orm.em.getConnection().execute<Array<{ count: number }>>(hasMetadataIndexes);
    t.equal(indexes!.count, 3, 'the metadata indexes of chunks and vector rows (migration 0018) and of documents are there');
    const optionsOf = async (index: string) => String((await reopened.orm.em.getConnection().execute<Array<{ reloptions: string[] | string | null }>>(
      'select reloptions from pg_class where relname = ?', [index],
    ))[0]!.reloptions);
    t.match(await optionsOf('documents_metadata_index'), /gin_pending_list_limit=64/, 'the start ran the missing migration: the documents index, with a short pending list');
    t.match(await optionsOf('chunks_metadata_index'), /gin_pending_list_limit=64/, 'the chunks index keeps a short pending list');
    t.match(await optionsOf('pgvector_embeddings_metadata_index'), /fastupdate=off/, 'the index over vector rows, never vacuumed by the service, keeps no pending entries');
    const names = await reopened.orm.em.getConnection().execute<Array<{ name: string }>>('select name from schema_migrations');
    t.equal(names.length, migrationNames.length, 'and recorded it once, nothing run twice');
  });
}
