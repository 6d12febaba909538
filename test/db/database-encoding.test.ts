/**
 * PostgreSQL databases not in UTF8 are refused at start, before anything is written: the service
 * stores text of every language, and the document list's `q` folds names with normalize(), which
 * PostgreSQL refuses outside UTF8 (such a database migrated and then answered those listings 500).
 */
import pg from 'pg';
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { scratchDatabaseUrl } from '../support/test-app.js';

if (!process.env.TEST_DATABASE_URL) {
  t.pass('PostgreSQL only (TEST_DATABASE_URL unset): PGlite is always UTF8');
} else {
  t.test('a database that is not UTF8 is refused before anything is written, naming the fix', async (t) => {
    for (const encoding of ['SQL_ASCII', 'LATIN1'] as const) {
      const url = await scratchDatabaseUrl(t, { encoding });
      await t.rejects(openDatabase({ databaseUrl: url }), { message: `the database's encoding is ${encoding}; the service needs a UTF8 database (create it with: create database <name> encoding 'UTF8' template template0)` }, encoding);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query("select count(*)::int as count from information_schema.tables where table_schema = 'public'");
      await client.end();
      t.equal(rows[0].count, 0, `${encoding}: no table created`);
    }
  });
}
