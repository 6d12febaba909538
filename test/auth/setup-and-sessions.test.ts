import t from 'tap';
import { ADMIN, buildTestApp, sessionCookieOf, setupAdmin, testBackends } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const { app } = ctx;

    t.test('setup state table (spec 3)', async (t) => {
      t.same((await app.inject({ url: '/v1/auth/setup-status' })).json(), { needs_setup: true });
      const me = await app.inject({ url: '/v1/auth/me' });
      t.equal(me.statusCode, 401, 'no admin yet, no session: 401');

      const first = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: { ...ADMIN, display_name: 'Ada' } });
      t.equal(first.statusCode, 201);
      t.match(first.json(), { email: ADMIN.email, display_name: 'Ada', role: 'admin' });
      t.notOk('password_hash' in first.json(), 'no hash in the response');
      const cookie = first.cookies.find((c) => c.name === 'svc_session');
      t.ok(cookie, 'setup creates a session');
      t.equal(cookie?.httpOnly, true);
      t.equal(cookie?.sameSite, 'Lax');
      t.equal(cookie?.path, '/');
      t.notOk(cookie?.secure, 'Secure only when session_cookie_secure');
      t.same((await app.inject({ url: '/v1/auth/setup-status' })).json(), { needs_setup: false });

      const second = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: { email: 'other@example.com', password: 'another password' } });
      t.equal(second.statusCode, 409);
      t.type(second.json().detail, 'string');
      // "any later call": the 409 comes before the body is validated or even parsed.
      const laterBodies = [
        { name: 'an empty object', payload: {} },
        { name: 'a short password', payload: { email: 'other@example.com', password: 'short' } },
        { name: 'a body that is not JSON', payload: '{not json', headers: { 'content-type': 'application/json' } },
      ];
      for (const { name, payload, headers } of laterBodies) {
        const later = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload, ...(headers ? { headers } : {}) });
        t.equal(later.statusCode, 409, `${name}: 409`);
        t.same(later.json(), { detail: 'Setup has already been completed', code: 'conflict' }, `${name}: the same {detail}`);
        t.notOk(later.cookies.some((c) => c.name === 'svc_session'), `${name}: no session`);
      }
      const users = await app.inject({ url: '/v1/admin/users', headers: { cookie: sessionCookieOf(first) } });
      t.equal(users.json().total, 1, 'the later setups created nobody');
    });

    t.test('login, me, logout, logout-all, password change revoke exactly the stated sessions', async (t) => {
      const login = async (password = ADMIN.password) =>
        app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: ADMIN.email.toUpperCase(), password } });
      const me = (cookie: string) => app.inject({ url: '/v1/auth/me', headers: { cookie } });

      const wrong = await login('not the password');
      t.equal(wrong.statusCode, 401);
      t.equal(wrong.cookies.length, 0);
      const unknown = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'nobody@example.com', password: 'whatever1' } });
      t.equal(unknown.statusCode, 401);
      t.equal(unknown.json().detail, wrong.json().detail, 'unknown email and wrong password look the same');

      const a = sessionCookieOf(await login());
      const b = sessionCookieOf(await login());
      const c = sessionCookieOf(await login());
      t.equal((await me(a)).statusCode, 200);
      t.equal((await me(a)).json().email, ADMIN.email);

      const logout = await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: { cookie: a } });
      t.equal(logout.statusCode, 204);
      t.equal((await me(a)).statusCode, 401, 'logout ends the current session');
      t.equal((await me(b)).statusCode, 200, 'and only that one');

      const all = await app.inject({ method: 'POST', url: '/v1/auth/logout-all', headers: { cookie: b } });
      t.equal(all.statusCode, 200);
      t.equal(all.json().revoked_sessions, 3, 'b, c and the session setup opened');
      t.equal((await me(b)).statusCode, 401);
      t.equal((await me(c)).statusCode, 401, 'logout-all ends every session of the user');

      const d = sessionCookieOf(await login());
      const e = sessionCookieOf(await login());
      const badCurrent = await app.inject({ method: 'POST', url: '/v1/auth/password', headers: { cookie: d }, payload: { current_password: 'wrong password', new_password: 'brand new password' } });
      t.equal(badCurrent.statusCode, 400);
      const short = await app.inject({ method: 'POST', url: '/v1/auth/password', headers: { cookie: d }, payload: { current_password: ADMIN.password, new_password: 'short' } });
      t.equal(short.statusCode, 400);
      t.match(short.json().detail, /at least 8 characters/);
      const emoji = await app.inject({ method: 'POST', url: '/v1/auth/password', headers: { cookie: d }, payload: { current_password: ADMIN.password, new_password: '\u{1F600}\u{1F600}\u{1F600}\u{1F600}' } });
      t.equal(emoji.statusCode, 400, 'four emoji are four characters, though eight UTF-16 units');
      t.equal((await me(d)).statusCode, 200, 'failed changes revoke nothing');

      const changed = await app.inject({ method: 'POST', url: '/v1/auth/password', headers: { cookie: d }, payload: { current_password: ADMIN.password, new_password: 'brand new password' } });
      t.equal(changed.statusCode, 200);
      const fresh = sessionCookieOf(changed);
      t.not(fresh, d, 'the caller gets a fresh session cookie');
      t.equal((await me(d)).statusCode, 401, 'the calling session is revoked');
      t.equal((await me(e)).statusCode, 401, 'every other session is revoked');
      t.equal((await me(fresh)).statusCode, 200, 'the fresh session works');
      t.equal((await login()).statusCode, 401, 'the old password no longer works');
      t.equal((await login('brand new password')).statusCode, 200);
      await app.inject({ method: 'POST', url: '/v1/auth/password', headers: { cookie: fresh }, payload: { current_password: 'brand new password', new_password: ADMIN.password } });
    });

    t.test('a forged or garbage session cookie is 401', async (t) => {
      const response = await app.inject({ url: '/v1/auth/whoami', headers: { cookie: 'svc_session=not-a-real-session' } });
      t.equal(response.statusCode, 401);
      t.type(response.json().detail, 'string');
    });

    t.test('a cross-origin cookie POST is refused', async (t) => {
      const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN });
      const cookie = sessionCookieOf(login);
      const refused = await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: { cookie, origin: 'https://evil.example', host: 'localhost:80' } });
      t.equal(refused.statusCode, 403);
      const same = await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: { cookie, origin: 'http://localhost:80', host: 'localhost:80' } });
      t.equal(same.statusCode, 204);
    });

    t.test('a cross-origin login sets no cookie (login CSRF); same-origin and Origin-less logins work', async (t) => {
      const foreign = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN, headers: { origin: 'https://evil.example', host: 'localhost:80' } });
      t.equal(foreign.statusCode, 403, foreign.body);
      t.match(foreign.json().detail, /Cross-origin request refused/);
      t.same(foreign.cookies, [], 'no session cookie');
      const own = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN, headers: { origin: 'http://localhost:80', host: 'localhost:80' } });
      t.equal(own.statusCode, 200);
      t.ok(sessionCookieOf(own));
      t.equal((await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN })).statusCode, 200, 'a client that sends no Origin (curl, SDKs)');
    });

    t.test('whoami for a session', async (t) => {
      const cookie = await setupAdmin(app).catch(async () => sessionCookieOf(await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN })));
      const response = await app.inject({ url: '/v1/auth/whoami', headers: { cookie } });
      t.equal(response.statusCode, 200);
      t.match(response.json(), { auth_method: 'session', user: { email: ADMIN.email, role: 'admin' }, scopes: ['*:*'], collection: null });
    });

    t.test('a login lasts session_ttl_hours', async (t) => {
      const cookie = sessionCookieOf(await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN }));
      const patched = await app.inject({ method: 'PATCH', url: '/v1/admin/settings', headers: { cookie }, payload: { values: { session_ttl_hours: 2 } } });
      t.equal(patched.statusCode, 200, patched.body);
      const before = Date.now();
      const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN });
      const expires = login.cookies.find((each) => each.name === 'svc_session')!.expires!.getTime();
      t.ok(Math.abs(expires - (before + 2 * 3_600_000)) < 60_000, `the cookie expires in 2 hours (${new Date(expires).toISOString()})`);
      const reset = await app.inject({ method: 'POST', url: '/v1/admin/settings/reset', headers: { cookie }, payload: { keys: ['session_ttl_hours'] } });
      t.equal(reset.statusCode, 200, reset.body);
    });
  });
}
