/**
 * Replicas starting together on a fresh PostgreSQL database (a new deploy, an upgrade carrying a
 * migration) take turns migrating: before the advisory lock, all but one failed on the objects the
 * first had just created and exited (5 of 6 tries of two replicas).
 */
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { migrationNames } from '../../src/db/migrations/index.js';
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
    t.equal(Number(applied!.count), migrationNames.length, 'each migration recorded once');
  });
}
