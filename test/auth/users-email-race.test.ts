/**
 * Requests that claim one email at the same time: the ones that lose are told so (409, the detail
 * of the sequential case), never a 500. createUser looks for the email, hashes the password
 * (argon2id, ~110 ms) and only then inserts, so a request that commits the email in between is
 * seen by nothing but the unique index on users (lower(email)).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { assertError } from '../support/assertions.js';
import { adminTestApp, testBackends } from '../support/test-app.js';

const taken = (email: string) => `A user with email ${email} already exists`;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    // The default cost, so that the hash takes the time it takes in production.
    const { app, cookie, services } = await adminTestApp(t, backend, { passwordHashCost: loadConfig({}).passwordHashCost });
    const createUser = (email: string) =>
      app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie }, payload: { email, password: 'race-password', role: 'viewer' } });
    const holders = async (email: string) =>
      (await app.inject({ url: '/v1/admin/users?limit=100', headers: { cookie } })).json().data.filter((user: { email: string }) => user.email === email).length;

    await t.test('four creates of one email at once: one 201, three 409', async (t) => {
      const email = 'race@example.com';
      const answers = await Promise.all([1, 2, 3, 4].map(() => createUser(email)));
      t.same(answers.map((answer) => answer.statusCode).sort(), [201, 409, 409, 409], answers.map((answer) => `${answer.statusCode} ${answer.body}`).join('\n'));
      for (const answer of answers.filter((answer) => answer.statusCode !== 201)) assertError(t, answer, 409, taken(email));
      t.equal(await holders(email), 1, 'one user holds the email');
    });

    // The PATCH starts at several points of the create's hashing, so that it commits before the
    // create looks, while the create hashes, and (when the create is quicker) after it inserts.
    for (const delayMs of [0, 20, 60, 150]) {
      await t.test(`a create racing a PATCH that gives another user its email (PATCH ${delayMs} ms later): one wins, the other is a 409`, async (t) => {
        const email = `contested-${delayMs}@example.com`;
        const other = await createUser(`other-${delayMs}@example.com`);
        t.equal(other.statusCode, 201);
        const [created, patched] = await Promise.all([
          createUser(email),
          sleep(delayMs).then(() => app.inject({ method: 'PATCH', url: `/v1/admin/users/${other.json().id}`, headers: { cookie }, payload: { email } })),
        ]);
        const statuses = `create ${created.statusCode} ${created.body}\npatch ${patched.statusCode} ${patched.body}`;
        t.ok((created.statusCode === 201 && patched.statusCode === 409) || (created.statusCode === 409 && patched.statusCode === 200), `one wins: ${statuses}`);
        assertError(t, created.statusCode === 201 ? patched : created, 409, taken(email));
        t.equal(await holders(email), 1, 'one user holds the email');
      });
    }

    // The PATCH loses only when the create commits between the PATCH's look and its commit, a window
    // of a few ms; another connection's open transaction holds it open. PGlite has one connection.
    if (backend === 'postgresql') {
      await t.test('a PATCH whose email another transaction inserts after the PATCH looked: 409', async (t) => {
        const email = 'late@example.com';
        const other = await createUser('patched@example.com');
        const creator = new pg.Client({ connectionString: services.config.databaseUrl });
        await creator.connect();
        t.teardown(() => creator.end());
        await creator.query('begin');
        await creator.query(`insert into users (id, email, password_hash, role, created_at, updated_at) values (gen_random_uuid(), $1, 'hash', 'viewer', now(), now())`, [email]);
        let answered = false;
        const patching = app.inject({ method: 'PATCH', url: `/v1/admin/users/${other.json().id}`, headers: { cookie }, payload: { email } })
          .finally(() => { answered = true; });
        // The PATCH does not see the uncommitted row; its update then waits on the row's index entry.
        const waiting = async () => Number((await creator.query(`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).rows[0].n);
        while (!answered && (await waiting()) === 0) await sleep(10);
        t.notOk(answered, 'the PATCH waited for the other transaction');
        await creator.query('commit');
        assertError(t, await patching, 409, taken(email));
        t.equal(await holders(email), 1, 'one user holds the email');
      });
    }
  });
}
