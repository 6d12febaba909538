/**
 * Expired login sessions, idempotency records past their 24 hours and jobs a day after they
 * finished are deleted (expired-records-sweep.ts), at start and hourly; live ones are kept and
 * still work.
 */
import t from 'tap';
import { ADMIN, adminTestApp, sessionCookieOf, testBackends } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(`${backend}: expired sessions and idempotency records are deleted, live ones kept`, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend, {}, { startWorkers: false });
    const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN });
    t.equal(login.statusCode, 200, login.body);
    const expiredCookie = sessionCookieOf(login);
    await services.sql(`update sessions set expires_at = now() - interval '1 minute' where created_at = (select max(created_at) from sessions)`);
    t.equal((await app.inject({ url: '/v1/auth/me', headers: { cookie: expiredCookie } })).statusCode, 401, 'an expired session is refused before any sweep removes it');

    const create = (key: string, name: string) => app.inject({
      method: 'POST', url: '/v1/collections', headers: { ...admin, 'idempotency-key': key }, payload: { name },
    });
    t.equal((await create('old-key', 'first')).statusCode, 201);
    t.equal((await create('new-key', 'second')).statusCode, 201);
    await services.sql(`update idempotency_records set created_at = now() - interval '25 hours' where key = 'old-key'`);
    // A backlog larger than one statement's batch, as left by a service that never deleted any.
    await services.sql(
      `insert into idempotency_records (id, owner, key, method, path, request_hash, response_status, response_body, created_at)
       select gen_random_uuid(), 'backlog', 'key-' || n, 'POST', '/v1/collections', repeat('0', 64), 201, '{}', now() - interval '3 days'
         from generate_series(1, 2500) as n`,
    );

    await services.start();
    for (let waited = 0; waited < 30_000; waited += 100) {
      const [left] = await services.sql<{ count: number }>(`select count(*)::int as count from idempotency_records where created_at < now() - interval '1 day'`);
      if (left!.count === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.same(await services.expiredRecordsSweep.sweep(), { sessions: 0, idempotency_records: 0, finished_jobs: 0, query_events: 0, query_texts: 0, query_hours: 0 }, 'the round at start deleted everything expired');
    const [sessions] = await services.sql<{ count: number }>('select count(*)::int as count from sessions');
    t.equal(sessions!.count, 1, 'the expired session is gone, the live one kept');
    t.equal((await app.inject({ url: '/v1/auth/me', headers: admin })).statusCode, 200, 'the live session still works');
    t.equal((await app.inject({ url: '/v1/auth/me', headers: { cookie: expiredCookie } })).statusCode, 401);

    const replayed = await create('new-key', 'second');
    t.equal(replayed.statusCode, 201);
    t.equal(replayed.headers['idempotent-replayed'], 'true', 'a record within its 24 hours still replays');
    const rerun = await create('old-key', 'first');
    t.equal(rerun.statusCode, 409, 'the expired key runs again (the collection exists now) instead of replaying');
    t.equal(rerun.headers['idempotent-replayed'], undefined);

    // Jobs a day after they finished go; unfinished ones, however old, stay.
    await services.sql(
      `insert into jobs (id, kind, collection_id, document_id, payload, status, attempts, max_attempts, run_after, created_at, updated_at)
       select gen_random_uuid(), 'ingest_document', null, null, '{}'::jsonb, j.status, 1, 3, now() + interval '1 day', now() - j.age, now() - j.age
         from (values ('done', interval '2 days'), ('failed', interval '25 hours'), ('done', interval '23 hours'), ('queued', interval '3 days'))
           as j(status, age)`,
    );
    t.same(await services.expiredRecordsSweep.sweep(), { sessions: 0, idempotency_records: 0, finished_jobs: 2, query_events: 0, query_texts: 0, query_hours: 0 });
    const jobs = await services.sql<{ status: string }>('select status from jobs where document_id is null order by status');
    t.same(jobs.map((job) => job.status), ['done', 'queued'], 'the job done 23 hours ago and the queued one are kept');
  });
}
