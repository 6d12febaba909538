import t from 'tap';
import {
  ADMIN, adminTestApp, sessionCookieOf, testBackends,
} from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, cookie } = ctx;

    t.test('a cookie name outside the RFC 6265 token set is refused, and logins keep working', async (t) => {
      const response = await app.inject({ method: 'PATCH', url: '/v1/admin/settings', headers: { cookie }, payload: { values: { session_cookie_name: 'bad name;x' } } });
      t.equal(response.statusCode, 400);
      t.match(response.json().detail, /session_cookie_name/);
      t.equal((await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN })).statusCode, 200);
    });

    t.test('a validation error is replayed for the same Idempotency-Key', async (t) => {
      const headers = { cookie, 'idempotency-key': 'validation-replay' };
      const first = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers, payload: { name: 5 } });
      t.equal(first.statusCode, 400);
      const again = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers, payload: { name: 5 } });
      t.equal(again.statusCode, 400);
      t.equal(again.headers['idempotent-replayed'], 'true');
      const other = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers, payload: { name: 'ok' } });
      t.equal(other.statusCode, 422, 'the key is bound to the first body');
    });

    t.test('replacing the chat preferences with a scalar clears the stored key', async (t) => {
      await app.inject({ method: 'PUT', url: '/v1/auth/preferences', headers: { cookie }, payload: { chat: { openai_key: 'sk-secret' } } });
      await app.inject({ method: 'PUT', url: '/v1/auth/preferences', headers: { cookie }, payload: { chat: 'off' } });
      const rows = await ctx.services.db.fork().getConnection().execute<Array<{ sealed: string | null }>>('select chat_openai_key_sealed as sealed from users where email = ?', [ADMIN.email]);
      t.equal(rows[0]?.sealed, null);
      t.same((await app.inject({ url: '/v1/auth/preferences', headers: { cookie } })).json(), { data: { chat: 'off' } });
    });

    t.test('two admins removing each other at once leave one admin', async (t) => {
      const second = { email: 'b@example.com', password: 'second password' };
      const created = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie }, payload: second });
      const secondId = created.json().id as string;
      const firstId = (await app.inject({ url: '/v1/auth/me', headers: { cookie } })).json().id as string;
      const secondCookie = sessionCookieOf(await app.inject({ method: 'POST', url: '/v1/auth/login', payload: second }));
      const [demote, remove] = await Promise.all([
        app.inject({ method: 'PATCH', url: `/v1/admin/users/${firstId}`, headers: { cookie }, payload: { role: 'viewer' } }),
        app.inject({ method: 'DELETE', url: `/v1/admin/users/${secondId}`, headers: { cookie: secondCookie } }),
      ]);
      const statuses = [demote.statusCode, remove.statusCode].sort();
      t.ok(statuses.includes(409), `one of them is refused (${statuses.join(', ')})`);
      const admins = await ctx.services.db.fork().getConnection().execute<Array<{ count: string | number }>>("select count(*) as count from users where role = 'admin'");
      t.equal(Number(admins[0]?.count), 1, 'exactly one admin remains');
    });
  });
}
