/**
 * Replicas starting together on a fresh PostgreSQL database (a new deploy, an upgrade carrying a
 * migration) take turns migrating: before the advisory lock, all but one failed on the objects the
 * first had just created and exited (5 of 6 tries of two replicas).
 */
import pg from 'pg';
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { scratchDatabaseUrl } from '../support/test-app.js';

if (!process.env.TEST_DATABASE_URL) {
  t.pass('PostgreSQL only (TEST_DATABASE_URL unset): the embedded database has one process');
} else {
  t.test('four processes open one fresh database at once: every one starts, migrations run once', async (t) => {
    const url = await scratchDatabaseUrl(t);
    const opened = await Promise.allSettled([1, 2, 3, 4].map(() => openDatabase({ databaseUrl: url })));
    const databases = opened.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    t.teardown(() => Promise.all(databases.map((database) => database.close())));
    t.same(opened.map((result) => (result.status === 'rejected' ? String(result.reason).slice(0, 300) : 'opened')), ['opened', 'opened', 'opened', 'opened']);
    const [applied] = await databases[0]!.orm.em.getConnection().execute<Array<{ count: string }>>('select count(*) as count from schema_migrations');
    const { migrations } = await import('../../src/db/migrations/index.js');
    t.equal(Number(applied!.count), migrations.length, 'each migration recorded once');
  });

  t.test('a database that is not UTF8 is refused before anything is written, naming the fix', async (t) => {
    for (const encoding of ['SQL_ASCII', 'LATIN1'] as const) {
      const url = await scratchDatabaseUrl(t, encoding);
      await t.rejects(openDatabase({ databaseUrl: url }), { message: `the database's encoding is ${encoding}; the service needs a UTF8 database (create it with: create database <name> encoding 'UTF8' template template0)` }, encoding);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query("select count(*)::int as count from information_schema.tables where table_schema = 'public'");
      await client.end();
      t.equal(rows[0].count, 0, `${encoding}: no table created`);
    }
  });
}
