/**
 * Raw-vector upserts racing other writes, on PostgreSQL (the embedded database has one connection).
 *
 * An upsert that PostgreSQL ends to resolve a deadlock is run again, not answered with a 500. A
 * collection truncated while an upsert replaced some of its vectors deadlocked this way: the
 * upsert's statement locks rows in the request's order, the truncate's delete in the table's. Here
 * a client of the test's own plays the other side: it holds the row of the upsert's second id, waits
 * until the upsert (having updated its first id) waits for that row, then asks for the first id's
 * row. The service's backend has waited longer (deadlock_timeout, 1 s) and detects the cycle, so its
 * statement is the one ended.
 *
 * An upsert whose write fails puts back only what it wrote over: the rows it read before writing
 * were put back even when its write had failed whole, so a vector a truncate deleted in between
 * came back (as a chunk without its vector).
 */
import pg from 'pg';
import t from 'tap';
import { waitUntilBlockedBy } from '../support/lock-waits.js';
import { adminTestApp, createTestCollection } from '../support/test-app.js';

const vector = (id: string, text: string, first: number) => ({ id, text, embedding: [first, 0.5, 0.25, 0.125] });

if (!process.env.TEST_DATABASE_URL) {
  t.plan(0, 'PostgreSQL only (TEST_DATABASE_URL unset)');
} else {
  t.test('postgresql: an upsert ended by a deadlock is run again and answers 200', async (t) => {
    const { app, admin, services } = await adminTestApp(t, 'postgresql');
    await createTestCollection(app, admin, { name: 'locked', dimension: 4 });
    const upsert = (vectors: unknown[]) => app.inject({ method: 'POST', url: '/v1/collections/locked/vectors/upsert', headers: admin, payload: { vectors } });
    t.equal((await upsert([vector('first', 'one', 1), vector('second', 'two', 1)])).statusCode, 200);

    const other = new pg.Client({ connectionString: services.config.databaseUrl });
    await other.connect();
    t.teardown(() => other.end());
    // Longer than the service's 1 s, so the service's backend is the one that finds the cycle.
    await other.query("set deadlock_timeout = '20s'");
    await other.query('begin');
    await other.query("select 1 from chunks where id = 'second' for update");

    const answer = upsert([vector('first', 'one retried', -1), vector('second', 'two retried', -1)]);
    const otherPid = (await other.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    // The upsert has updated `first` and waits for `second`, which this client holds.
    await waitUntilBlockedBy(services.sql, otherPid, 'the upsert waits for this client');
    // Now this client waits for `first`: a cycle, which the service's backend detects and ends,
    // letting go of `first`. Its retry then waits for this client, which lets go of both.
    await other.query("select 1 from chunks where id = 'first' for update");
    await other.query('rollback');

    const response = await answer;
    t.equal(response.statusCode, 200, `the upsert was run again (${response.body})`);
    t.same(response.json(), { upserted: 2 });
    const found = await app.inject({ method: 'POST', url: '/v1/collections/locked/query', headers: admin, payload: { query: 'retried', search_mode: 'keyword', skip_cache: true } });
    t.same(found.json().results.map((result: { id: string }) => result.id).sort(), ['first', 'second'], 'both vectors hold the retried text');
  });

  t.test('postgresql: an upsert whose write fails does not bring back a vector deleted since it read it', async (t) => {
    const { app, admin, services } = await adminTestApp(t, 'postgresql');
    await createTestCollection(app, admin, { name: 'taken', dimension: 4 });
    const upsert = (vectors: unknown[]) => app.inject({ method: 'POST', url: '/v1/collections/taken/vectors/upsert', headers: admin, payload: { vectors } });
    t.equal((await upsert([vector('kept', 'first text', 1)])).statusCode, 200);
    // A write that fails: the database refuses this one text.
    await services.sql(`create function refuse_explosive_text() returns trigger language plpgsql as $$
      begin if new.text = 'explosive' then raise exception 'refused for the test'; end if; return new; end $$`);
    await services.sql('create trigger refuse_explosive_text before insert or update on chunks for each row execute function refuse_explosive_text()');

    const other = new pg.Client({ connectionString: services.config.databaseUrl });
    await other.connect();
    t.teardown(() => other.end());
    const otherPid = (await other.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    // Holding the collection's row keeps the upsert's write waiting after it has read `kept`.
    await other.query('begin');
    await other.query("select 1 from collections where name = 'taken' for update");
    const answer = upsert([vector('kept', 'explosive', -1)]);
    await waitUntilBlockedBy(services.sql, otherPid, 'the upsert waits for the collection');
    // What a truncate does to the row meanwhile; then the write goes on, and fails.
    await other.query("delete from chunks where id = 'kept'");
    await other.query('commit');

    const response = await answer;
    t.equal(response.statusCode, 500, 'the refused write fails the upsert');
    const rows = await services.sql<{ text: string }>("select text from chunks where id = 'kept'");
    t.same(rows, [], 'the deleted vector stays deleted');
  });
}
