import t from 'tap';
import type { App } from '../../src/app.js';
import { ADMIN, bearer, buildTestApp, createApiKey, setupAdmin, testBackends } from '../support/test-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING_ID = '00000000-0000-4000-8000-000000000000';

/** api-contract 3: every setting key and its default. */
const SETTING_DEFAULTS: Record<string, string | number | boolean> = {
  allow_local_webhooks: false,
  webhook_timeout_ms: 10000,
  session_cookie_name: 'svc_session',
  session_cookie_secure: false,
  session_cookie_samesite: 'lax',
  session_ttl_hours: 168,
  query_cache_ttl_s: 60,
  embedding_cache_enabled: true,
  default_chunk_size: 800,
  default_chunk_overlap: 100,
};

interface UserView { id: string; email: string; display_name: string | null; role: string; created_at: string; updated_at: string }
interface AuditView { id: string; actor_id: string | null; actor_type: string; action: string; resource_type: string; resource_id: string | null; details: Record<string, unknown>; created_at: string }
interface SettingView { key: string; value: unknown; default: unknown; source: string; description: string }

async function login(app: App, email: string, password: string, cookieName = 'svc_session') {
  const response = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password } });
  const cookie = response.cookies.find((c) => c.name === cookieName);
  return { response, cookie, header: cookie ? `${cookie.name}=${cookie.value}` : '' };
}

/** Lets the clock move on, so that events of consecutive requests never share a timestamp. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const { app } = ctx;
    let cookie = await setupAdmin(app);
    const me = await app.inject({ method: 'GET', url: '/v1/auth/me', headers: { cookie } });
    const adminId = (me.json() as UserView).id;
    t.match(adminId, UUID);

    const as = (sessionCookie: string) => ({
      get: (url: string) => app.inject({ method: 'GET', url, headers: { cookie: sessionCookie } }),
      post: (url: string, payload?: object) => app.inject({ method: 'POST', url, headers: { cookie: sessionCookie }, ...(payload ? { payload } : {}) }),
      patch: (url: string, payload: object) => app.inject({ method: 'PATCH', url, headers: { cookie: sessionCookie }, payload }),
      delete: (url: string) => app.inject({ method: 'DELETE', url, headers: { cookie: sessionCookie } }),
    });
    const admin = () => as(cookie);
    const userCount = async () => (await admin().get('/v1/admin/users')).json().total as number;

    let bobId = '';
    let viewerId = '';
    let keyId = '';
    let bobKeyId = '';

    await t.test('users: create', async (t) => {
      await tick();
      let response = await admin().post('/v1/admin/users', { email: 'Bob@Example.com', password: 'bob-password', display_name: 'Bob' });
      t.equal(response.statusCode, 201);
      const bob = response.json() as UserView;
      t.match(bob.id, UUID);
      t.equal(bob.email, 'bob@example.com', 'emails are stored lower-case');
      t.equal(bob.display_name, 'Bob');
      t.equal(bob.role, 'admin', 'role defaults to admin');
      t.ok(!Number.isNaN(Date.parse(bob.created_at)));
      t.notOk('password' in bob || 'password_hash' in bob || 'passwordHash' in bob, 'no password material');
      bobId = bob.id;

      await tick();
      response = await admin().post('/v1/admin/users', { email: 'viewer@example.com', password: 'viewer-password', role: 'viewer' });
      t.equal(response.statusCode, 201);
      t.equal(response.json().role, 'viewer');
      t.equal(response.json().display_name, null);
      viewerId = response.json().id;

      const before = await userCount();
      t.equal(before, 3);
      for (const [payload, status, what] of [
        [{ email: 'BOB@example.com', password: 'another-password' }, 409, 'duplicate email (case-insensitive)'],
        [{ email: 'short@example.com', password: 'seven77' }, 400, 'password of 7 characters'],
        [{ email: 'role@example.com', password: 'role-password', role: 'superuser' }, 400, 'unknown role'],
        [{ email: 'not-an-email', password: 'email-password' }, 400, 'bad email'],
        [{ password: 'no-email-password' }, 400, 'missing email'],
        [{ email: 'extra@example.com', password: 'extra-password', admin: true }, 400, 'unknown field'],
      ] as const) {
        response = await admin().post('/v1/admin/users', payload);
        t.equal(response.statusCode, status, what);
        t.type(response.json().detail, 'string', `${what} answers {detail}`);
      }
      t.equal(await userCount(), before, 'no failed creation left a user');

      // Exactly 8 characters is enough.
      await tick();
      response = await admin().post('/v1/admin/users', { email: 'eight@example.com', password: '12345678', role: 'viewer' });
      t.equal(response.statusCode, 201);
      const eightId = response.json().id as string;
      await tick();
      t.equal((await admin().delete(`/v1/admin/users/${eightId}`)).statusCode, 204);
    });

    await t.test('users: list with limit and offset, get', async (t) => {
      let response = await admin().get('/v1/admin/users');
      t.equal(response.statusCode, 200);
      const all = response.json() as { data: UserView[]; total: number; limit: number; offset: number };
      t.equal(all.total, 3);
      t.equal(all.limit, 50);
      t.equal(all.offset, 0);
      t.strictSame(all.data.map((user) => user.email).sort(), ['admin@example.com', 'bob@example.com', 'viewer@example.com']);

      response = await admin().get('/v1/admin/users?limit=1&offset=1');
      t.equal(response.statusCode, 200);
      const second = response.json() as typeof all;
      t.equal(second.total, 3);
      t.equal(second.limit, 1);
      t.equal(second.offset, 1);
      t.equal(second.data.length, 1);
      t.equal(second.data[0]!.id, all.data[1]!.id, 'offset 1 is the second of the full list');

      response = await admin().get('/v1/admin/users?limit=2&offset=2');
      t.equal(response.json().data.length, 1);
      t.equal(response.json().data[0].id, all.data[2]!.id);
      response = await admin().get('/v1/admin/users?offset=10');
      t.strictSame(response.json().data, []);
      t.equal(response.json().total, 3);

      for (const query of ['limit=0', 'limit=501', 'offset=-1', 'limit=abc']) {
        response = await admin().get(`/v1/admin/users?${query}`);
        t.equal(response.statusCode, 400, query);
        t.type(response.json().detail, 'string');
      }

      response = await admin().get(`/v1/admin/users/${bobId}`);
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), all.data.find((user) => user.id === bobId));

      response = await admin().get('/v1/admin/users/not-a-uuid');
      t.equal(response.statusCode, 400);
      t.type(response.json().detail, 'string');
      response = await admin().get(`/v1/admin/users/${MISSING_ID}`);
      t.equal(response.statusCode, 404);
      t.type(response.json().detail, 'string');
    });

    await t.test('users: patch', async (t) => {
      await tick();
      let response = await admin().patch(`/v1/admin/users/${bobId}`, { display_name: 'Robert', role: 'viewer', email: 'Robert@Example.com' });
      t.equal(response.statusCode, 200);
      t.match(response.json(), { id: bobId, display_name: 'Robert', role: 'viewer', email: 'robert@example.com' });
      response = await admin().get(`/v1/admin/users/${bobId}`);
      t.match(response.json(), { id: bobId, display_name: 'Robert', role: 'viewer', email: 'robert@example.com' });

      for (const [url, payload, status, what] of [
        [`/v1/admin/users/${bobId}`, { email: ADMIN.email }, 409, 'email of another user'],
        [`/v1/admin/users/${bobId}`, { role: 'owner' }, 400, 'unknown role'],
        [`/v1/admin/users/${bobId}`, { password: 'short' }, 400, 'short password'],
        [`/v1/admin/users/${bobId}`, { id: MISSING_ID }, 400, 'field that cannot be updated'],
        [`/v1/admin/users/${bobId}`, { display_name: 5 }, 400, 'wrong type'],
        ['/v1/admin/users/12345', { display_name: 'x' }, 400, 'bad uuid'],
        [`/v1/admin/users/${MISSING_ID}`, { display_name: 'x' }, 404, 'unknown id'],
      ] as const) {
        response = await admin().patch(url, payload);
        t.equal(response.statusCode, status, what);
        t.type(response.json().detail, 'string');
      }
      response = await admin().get(`/v1/admin/users/${bobId}`);
      t.match(response.json(), { display_name: 'Robert', role: 'viewer', email: 'robert@example.com' }, 'failed patches changed nothing');
      t.equal((await login(app, 'robert@example.com', 'bob-password')).response.statusCode, 200, 'password unchanged');

      await tick();
      response = await admin().patch(`/v1/admin/users/${bobId}`, { display_name: null });
      t.equal(response.statusCode, 200);
      t.equal(response.json().display_name, null);
    });

    await t.test('users: the last admin cannot be deleted or demoted', async (t) => {
      let response = await admin().delete(`/v1/admin/users/${adminId}`);
      t.equal(response.statusCode, 409);
      t.type(response.json().detail, 'string');
      response = await admin().patch(`/v1/admin/users/${adminId}`, { role: 'viewer' });
      t.equal(response.statusCode, 409);
      t.type(response.json().detail, 'string');
      response = await admin().get(`/v1/admin/users/${adminId}`);
      t.equal(response.json().role, 'admin');

      // With a second admin, the first may be demoted (and is promoted back here).
      await tick();
      response = await admin().patch(`/v1/admin/users/${bobId}`, { role: 'admin' });
      t.equal(response.statusCode, 200);
      t.equal(response.json().role, 'admin');
      const bob = await login(app, 'robert@example.com', 'bob-password');
      t.equal(bob.response.statusCode, 200);
      await tick();
      response = await as(bob.header).patch(`/v1/admin/users/${adminId}`, { role: 'viewer' });
      t.equal(response.statusCode, 200, 'another admin remains');
      response = await as(bob.header).delete(`/v1/admin/users/${bobId}`);
      t.equal(response.statusCode, 409, 'bob is now the last admin');
      await tick();
      response = await as(bob.header).patch(`/v1/admin/users/${adminId}`, { role: 'admin' });
      t.equal(response.statusCode, 200);
      t.equal(response.json().role, 'admin');

      // Bob, an admin, mints a key: an action by another actor for the audit filters.
      await tick();
      response = await as(bob.header).post('/v1/admin/api-keys', { name: 'bob key' });
      t.equal(response.statusCode, 201);
      bobKeyId = response.json().id;
    });

    await t.test('users: an admin password reset signs that user out', async (t) => {
      const viewer = await login(app, 'viewer@example.com', 'viewer-password');
      t.equal(viewer.response.statusCode, 200);
      t.equal((await as(viewer.header).get('/v1/auth/me')).statusCode, 200);

      await tick();
      const response = await admin().patch(`/v1/admin/users/${viewerId}`, { password: 'viewer-new-password' });
      t.equal(response.statusCode, 200);
      const me = await as(viewer.header).get('/v1/auth/me');
      t.equal(me.statusCode, 401, 'the old session is revoked');
      t.type(me.json().detail, 'string');
      t.equal((await login(app, 'viewer@example.com', 'viewer-password')).response.statusCode, 401, 'old password refused');
      t.equal((await login(app, 'viewer@example.com', 'viewer-new-password')).response.statusCode, 200, 'new password works');
      t.equal((await admin().get('/v1/auth/me')).statusCode, 200, 'the admin\'s own session is untouched');
    });

    await t.test('a viewer and an API key get 403 on /v1/admin/*', async (t) => {
      const viewer = await login(app, 'viewer@example.com', 'viewer-new-password');
      t.equal(viewer.response.statusCode, 200);
      t.equal(viewer.response.json().role, 'viewer');
      const key = await createApiKey(app, cookie, { name: 'admin-refused key' });
      keyId = key.id;
      const requests = [
        ['GET', '/v1/admin/users', undefined],
        ['POST', '/v1/admin/users', { email: 'by-viewer@example.com', password: 'by-viewer-password' }],
        ['GET', `/v1/admin/users/${adminId}`, undefined],
        ['PATCH', `/v1/admin/users/${viewerId}`, { role: 'admin' }],
        ['DELETE', `/v1/admin/users/${adminId}`, undefined],
        ['GET', '/v1/admin/api-keys', undefined],
        ['POST', '/v1/admin/api-keys', { name: 'by viewer' }],
        ['POST', `/v1/admin/api-keys/${keyId}/rotate`, undefined],
        ['GET', '/v1/admin/audit', undefined],
        ['GET', '/v1/admin/settings', undefined],
        ['PATCH', '/v1/admin/settings', { values: { query_cache_ttl_s: 1 } }],
        ['POST', '/v1/admin/settings/reset', { keys: ['query_cache_ttl_s'] }],
      ] as const;
      for (const [method, url, payload] of requests) {
        for (const [who, headers] of [['viewer', { cookie: viewer.header }], ['API key', bearer(key.key)]] as const) {
          const response = await app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
          t.equal(response.statusCode, 403, `${who}: ${method} ${url}`);
          t.type(response.json().detail, 'string');
        }
        const anonymous = await app.inject({ method, url, ...(payload ? { payload } : {}) });
        t.equal(anonymous.statusCode, 401, `anonymous: ${method} ${url}`);
      }
      t.equal((await admin().get(`/v1/admin/users/${viewerId}`)).json().role, 'viewer', 'the viewer did not promote itself');
      t.equal(await userCount(), 3);
      t.equal((await as(viewer.header).get('/v1/auth/me')).statusCode, 200, 'a viewer may read /v1/auth/me');
    });

    await t.test('a viewer reads collections, documents and answers, and is refused every write', async (t) => {
      const viewer = as((await login(app, 'viewer@example.com', 'viewer-new-password')).header);
      t.equal((await admin().post('/v1/collections', { name: 'viewed' })).statusCode, 201);
      t.match((await viewer.get('/v1/collections')).json(), { data: [{ name: 'viewed' }] }, 'the collection list');
      t.equal((await viewer.get('/v1/collections/viewed/documents')).statusCode, 200, 'the document list');
      t.equal((await viewer.post('/v1/collections/viewed/query', { query: 'lighthouse' })).statusCode, 200, 'a query');
      const writes = [
        ['collection:write', () => viewer.post('/v1/collections', { name: 'by-viewer' })],
        ['collection:write', () => viewer.patch('/v1/collections/viewed', { description: 'changed by a viewer' })],
        ['collection:delete', () => viewer.post('/v1/collections/viewed/truncate')],
        ['collection:delete', () => viewer.delete('/v1/collections/viewed')],
        ['vector:write', () => viewer.post('/v1/collections/viewed/vectors/upsert', { vectors: [{ id: 'v', text: 'x', embedding: Array(384).fill(0.1) }] })],
        ['vector:delete', () => viewer.post('/v1/collections/viewed/vectors/delete', { ids: ['v'] })],
      ] as const;
      for (const [scope, send] of writes) {
        const response = await send();
        t.equal(response.statusCode, 403, `${scope}: ${response.body}`);
        t.equal(response.json().detail, `Your role does not allow ${scope}`);
      }
      t.match((await admin().get('/v1/collections')).json(), { total: 1, data: [{ name: 'viewed', description: null }] }, 'nothing changed');
      t.equal((await admin().delete('/v1/collections/viewed')).statusCode, 204);
    });

    await t.test('users: delete', async (t) => {
      await tick();
      let response = await admin().delete(`/v1/admin/users/${bobId}`);
      t.equal(response.statusCode, 204);
      t.equal(response.body, '');
      response = await admin().get(`/v1/admin/users/${bobId}`);
      t.equal(response.statusCode, 404);
      response = await admin().delete(`/v1/admin/users/${bobId}`);
      t.equal(response.statusCode, 404);
      t.type(response.json().detail, 'string');
      response = await admin().delete('/v1/admin/users/nope');
      t.equal(response.statusCode, 400);
      t.equal(await userCount(), 2);
      t.equal((await login(app, 'robert@example.com', 'bob-password')).response.statusCode, 401, 'a deleted user cannot log in');
    });

    await t.test('api keys: rotate for the audit trail', async (t) => {
      await tick();
      const response = await admin().post(`/v1/admin/api-keys/${keyId}/rotate`);
      t.equal(response.statusCode, 200);
      t.match(response.json().key, /^svc_sk_/);
    });

    await t.test('settings: list', async (t) => {
      const response = await admin().get('/v1/admin/settings');
      t.equal(response.statusCode, 200);
      const data = response.json().data as SettingView[];
      t.strictSame(data.map((setting) => setting.key).sort(), Object.keys(SETTING_DEFAULTS).sort(), 'every key of api-contract 3');
      for (const setting of data) {
        t.strictSame(setting.default, SETTING_DEFAULTS[setting.key], `${setting.key} default`);
        t.strictSame(setting.value, SETTING_DEFAULTS[setting.key], `${setting.key} value`);
        t.equal(setting.source, 'default', `${setting.key} source`);
        t.type(setting.description, 'string');
        t.ok(setting.description.length > 0, `${setting.key} has a description`);
      }
    });

    const setting = async (key: string) => {
      const response = await admin().get('/v1/admin/settings');
      t.equal(response.statusCode, 200);
      return (response.json().data as SettingView[]).find((item) => item.key === key)!;
    };

    await t.test('settings: update, refuse bad values, test, reset', async (t) => {
      await tick();
      let response = await admin().patch('/v1/admin/settings', { values: { query_cache_ttl_s: 5 } });
      t.equal(response.statusCode, 200);
      t.match((response.json().data as SettingView[]).find((item) => item.key === 'query_cache_ttl_s'), { value: 5, default: 60, source: 'database' });
      t.match(await setting('query_cache_ttl_s'), { value: 5, default: 60, source: 'database' });
      t.match(await setting('webhook_timeout_ms'), { value: 10000, source: 'default' }, 'other settings untouched');

      const bad = [
        [{ values: { query_cache_ttl_s: '10' } }, 'string for an integer'],
        [{ values: { query_cache_ttl_s: 1.5 } }, 'fraction for an integer'],
        [{ values: { query_cache_ttl_s: -1 } }, 'below range'],
        [{ values: { query_cache_ttl_s: 86401 } }, 'above range'],
        [{ values: { session_cookie_secure: 'yes' } }, 'string for a boolean'],
        [{ values: { session_cookie_samesite: 'sideways' } }, 'value outside the allowed set'],
        [{ values: { session_cookie_name: '' } }, 'empty string'],
        [{ values: { no_such_setting: 1 } }, 'unknown key'],
        [{ values: { query_cache_ttl_s: 7, webhook_timeout_ms: 5 } }, 'one good and one bad value'],
        [{ values: { query_cache_ttl_s: 7, no_such_setting: true } }, 'one good value and an unknown key'],
        [{ query_cache_ttl_s: 7 }, 'values missing'],
        [{ values: { query_cache_ttl_s: 7 }, extra: 1 }, 'unknown field'],
        [{ values: [7] }, 'values not an object'],
        [{ values: { default_chunk_size: 100, default_chunk_overlap: 200 } }, 'a default overlap not smaller than the default size'],
        [{ values: { default_chunk_overlap: 800 } }, 'an overlap as large as the default size in force (800)'],
      ] as const;
      for (const [payload, what] of bad) {
        response = await admin().patch('/v1/admin/settings', payload);
        t.equal(response.statusCode, 400, what);
        t.type(response.json().detail, 'string', `${what} answers {detail}`);
      }
      t.match(await setting('query_cache_ttl_s'), { value: 5, source: 'database' }, 'nothing was saved');
      t.match(await setting('webhook_timeout_ms'), { value: 10000, source: 'default' }, 'nothing was saved');
      t.match(await setting('default_chunk_overlap'), { value: 100, source: 'default' }, 'nothing was saved');
      const overlap = await admin().patch('/v1/admin/settings', { values: { default_chunk_size: 100, default_chunk_overlap: 200 } });
      t.match(overlap.json().detail, /^default_chunk_overlap \(200\) must be smaller than default_chunk_size \(100\)/, 'the detail names both');
      response = await admin().post('/v1/admin/settings/test', { values: { default_chunk_overlap: 900 } });
      t.same(response.json(), { ok: false, errors: ['default_chunk_overlap (900) must be smaller than default_chunk_size (800)'] }, 'test says so too');

      response = await admin().post('/v1/admin/settings/test', { values: { query_cache_ttl_s: -1, no_such_setting: 1, session_cookie_secure: true } });
      t.equal(response.statusCode, 200);
      t.equal(response.json().ok, false);
      t.equal(response.json().errors.length, 2, 'one error per bad value');
      for (const error of response.json().errors) t.type(error, 'string');
      t.match(response.json().errors.join(' '), 'query_cache_ttl_s');
      t.match(response.json().errors.join(' '), 'no_such_setting');

      response = await admin().post('/v1/admin/settings/test', { values: { query_cache_ttl_s: 30, session_cookie_secure: true } });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), { ok: true, errors: [] });
      t.match(await setting('query_cache_ttl_s'), { value: 5, source: 'database' }, 'test saves nothing');
      t.match(await setting('session_cookie_secure'), { value: false, source: 'default' }, 'test saves nothing');

      response = await admin().post('/v1/admin/settings/reset', { keys: ['no_such_setting'] });
      t.equal(response.statusCode, 400);
      t.type(response.json().detail, 'string');
      response = await admin().post('/v1/admin/settings/reset', { keys: [] });
      t.equal(response.statusCode, 400);
      t.match(await setting('query_cache_ttl_s'), { value: 5, source: 'database' });

      await tick();
      response = await admin().post('/v1/admin/settings/reset', { keys: ['query_cache_ttl_s'] });
      t.equal(response.statusCode, 200);
      t.match((response.json().data as SettingView[]).find((item) => item.key === 'query_cache_ttl_s'), { value: 60, source: 'default' });
      t.match(await setting('query_cache_ttl_s'), { value: 60, default: 60, source: 'default' });

      // A saved pair of chunk defaults applies as saved, and a reset may not break it.
      t.equal((await admin().patch('/v1/admin/settings', { values: { default_chunk_size: 900, default_chunk_overlap: 850 } })).statusCode, 200);
      const defaults = await admin().post('/v1/collections', { name: 'saved-defaults' });
      t.match(defaults.json(), { chunk_size: 900, chunk_overlap: 850 }, 'the overlap saved, not halved to 450');
      const ownSize = await admin().post('/v1/collections', { name: 'own-size', chunk_size: 300 });
      t.match(ownSize.json(), { chunk_size: 300, chunk_overlap: 150 }, 'with a size of its own, the default overlap is kept to half of it');
      response = await admin().post('/v1/admin/settings/reset', { keys: ['default_chunk_size'] });
      t.equal(response.statusCode, 400, 'resetting the size alone would leave 800 under an overlap of 850');
      t.equal(response.json().detail, 'Resetting default_chunk_size would leave default_chunk_overlap (850) not smaller than default_chunk_size (800): reset both, or change the other first');
      t.match(await setting('default_chunk_size'), { value: 900, source: 'database' }, 'nothing was reset');
      response = await admin().post('/v1/admin/settings/reset', { keys: ['default_chunk_size', 'default_chunk_overlap'] });
      t.equal(response.statusCode, 200, 'both together');
      t.match(await setting('default_chunk_overlap'), { value: 100, source: 'default' });
    });

    await t.test('settings: session cookie attributes', async (t) => {
      let session = await login(app, ADMIN.email, ADMIN.password);
      t.equal(session.response.statusCode, 200);
      t.ok(session.cookie, 'default cookie name');
      t.notOk(session.cookie!.secure, 'not Secure by default');
      t.equal(session.cookie!.httpOnly, true);
      t.equal(session.cookie!.sameSite, 'Lax');
      t.equal(session.cookie!.path, '/');

      await tick();
      let response = await admin().patch('/v1/admin/settings', { values: { session_cookie_secure: true } });
      t.equal(response.statusCode, 200);
      session = await login(app, ADMIN.email, ADMIN.password);
      t.equal(session.response.statusCode, 200);
      t.equal(session.cookie!.secure, true, 'Secure once session_cookie_secure is true');
      t.match(String(session.response.headers['set-cookie']), /;\s*Secure/i);
      t.equal((await as(session.header).get('/v1/auth/me')).statusCode, 200);

      response = await admin().post('/v1/admin/settings/reset', { keys: ['session_cookie_secure'] });
      t.equal(response.statusCode, 200);
      session = await login(app, ADMIN.email, ADMIN.password);
      t.notOk(session.cookie!.secure, 'not Secure after reset');
      t.notMatch(String(session.response.headers['set-cookie']), /Secure/i);

      await tick();
      response = await admin().patch('/v1/admin/settings', { values: { session_cookie_name: 'my_session' } });
      t.equal(response.statusCode, 200);
      response = await admin().get('/v1/auth/me');
      t.equal(response.statusCode, 401, 'a cookie under the old name is not read');

      const renamed = await login(app, ADMIN.email, ADMIN.password, 'my_session');
      t.equal(renamed.response.statusCode, 200);
      t.ok(renamed.cookie, 'the login cookie has the new name');
      t.notOk(renamed.response.cookies.some((c) => c.name === 'svc_session'), 'and not the old one');
      response = await as(renamed.header).get('/v1/auth/me');
      t.equal(response.statusCode, 200, 'the renamed cookie authenticates');
      t.equal(response.json().email, ADMIN.email);

      response = await as(renamed.header).post('/v1/admin/settings/reset', { keys: ['session_cookie_name'] });
      t.equal(response.statusCode, 200);
      const restored = await login(app, ADMIN.email, ADMIN.password);
      t.ok(restored.cookie, 'back to svc_session');
      cookie = restored.header;
      t.equal((await admin().get('/v1/auth/me')).statusCode, 200);
    });

    await t.test('audit: every admin action, newest first, with filters', async (t) => {
      let response = await admin().get('/v1/admin/audit?limit=500');
      t.equal(response.statusCode, 200);
      const audit = response.json() as { data: AuditView[]; total: number; limit: number; offset: number };
      t.equal(audit.limit, 500);
      t.equal(audit.offset, 0);
      t.equal(audit.total, audit.data.length);
      const events = audit.data;
      const times = events.map((event) => Date.parse(event.created_at));
      t.ok(times.every((time, i) => i === 0 || times[i - 1]! >= time), 'newest first');

      const find = (action: string, resourceId?: string | null) =>
        events.filter((event) => event.action === action && (resourceId === undefined || event.resource_id === resourceId));

      /** The one event of an action (and resource); fails when there are none or several. */
      const only = (action: string, resourceId?: string) => {
        const found = find(action, resourceId);
        t.equal(found.length, 1, `exactly one ${action} ${resourceId ?? ''}`);
        return found[0];
      };

      t.match(only('auth.setup'), { actor_id: null, resource_type: 'user', resource_id: adminId });
      t.equal(find('user.create').length, 3, 'bob, the viewer and the 8-character user; failed creations are not audited');
      t.match(only('user.create', bobId), { actor_id: adminId, actor_type: 'user', resource_type: 'user', resource_id: bobId });
      t.match(only('user.create', viewerId), { actor_id: adminId, resource_type: 'user', resource_id: viewerId });
      t.notMatch(JSON.stringify(events), 'bob-password', 'no password in the audit trail');
      t.notMatch(JSON.stringify(events), 'viewer-new-password', 'no password in the audit trail');

      const bobUpdates = find('user.update', bobId);
      t.equal(bobUpdates.length, 3, 'three successful patches of bob; failed ones are not audited');
      t.ok(bobUpdates.every((event) => event.actor_id === adminId && event.resource_type === 'user'));
      const adminUpdates = find('user.update', adminId);
      t.equal(adminUpdates.length, 2, 'bob demoted and promoted the first admin');
      t.ok(adminUpdates.every((event) => event.actor_id === bobId));
      t.match(only('user.update', viewerId), { actor_id: adminId, resource_type: 'user' });
      t.match(only('user.delete', bobId), { actor_id: adminId, resource_type: 'user', resource_id: bobId });
      t.equal(find('user.delete').length, 2);

      t.match(only('api_key.create', bobKeyId), { actor_id: bobId, resource_type: 'api_key', resource_id: bobKeyId });
      t.match(only('api_key.create', keyId), { actor_id: adminId, resource_type: 'api_key', resource_id: keyId });
      t.match(only('api_key.rotate', keyId), { actor_id: adminId, resource_type: 'api_key', resource_id: keyId });
      t.equal(find('api_key.rotate').length, 1, 'the refused rotate of the viewer and the API key is not audited');

      const settingsUpdates = find('settings.update');
      t.equal(settingsUpdates.length, 4, 'four successful PATCHes; refused ones are not audited');
      t.ok(settingsUpdates.every((event) => event.actor_id === adminId && event.resource_type === 'settings'));
      t.equal(find('settings.reset').length, 4, 'four successful resets; refused ones are not audited');

      // Order of events of one resource: its deletion is newer than its creation.
      const index = (event: AuditView | undefined) => events.indexOf(event!);
      t.ok(index(find('user.delete', bobId)[0]) < index(bobUpdates[0]), 'delete is listed before the updates');
      t.ok(index(bobUpdates[bobUpdates.length - 1]) < index(find('user.create', bobId)[0]), 'updates before create');
      t.ok(index(find('user.create', bobId)[0]) < index(find('auth.setup')[0]), 'setup is the oldest');
      t.equal(events[events.length - 1]!.action, 'auth.setup');
      t.ok(index(find('api_key.rotate', keyId)[0]) < index(find('api_key.create', keyId)[0]));

      // Filters.
      response = await admin().get('/v1/admin/audit?action=user.create');
      t.equal(response.statusCode, 200);
      t.equal(response.json().total, 3);
      t.ok(response.json().data.every((event: AuditView) => event.action === 'user.create'));
      t.strictSame(response.json().data, find('user.create'), 'same events in the same order');

      response = await admin().get('/v1/admin/audit?resourceType=api_key');
      t.equal(response.json().total, 3);
      t.ok(response.json().data.every((event: AuditView) => event.resource_type === 'api_key'));

      response = await admin().get(`/v1/admin/audit?actorId=${bobId}`);
      t.equal(response.json().total, 3, 'bob: two updates of the first admin and one key');
      t.ok(response.json().data.every((event: AuditView) => event.actor_id === bobId));

      response = await admin().get(`/v1/admin/audit?actorId=${adminId}&resourceType=user&action=user.update`);
      t.equal(response.json().total, 4, 'filters combine');
      t.ok(response.json().data.every((event: AuditView) => event.actor_id === adminId && event.action === 'user.update'));

      response = await admin().get(`/v1/admin/audit?actorId=${viewerId}`);
      t.equal(response.json().total, 0);
      t.strictSame(response.json().data, []);
      response = await admin().get('/v1/admin/audit?action=no.such.action');
      t.equal(response.json().total, 0);

      response = await admin().get('/v1/admin/audit?limit=2&offset=1');
      t.equal(response.json().total, audit.total);
      t.equal(response.json().limit, 2);
      t.equal(response.json().offset, 1);
      t.strictSame(response.json().data.map((event: AuditView) => event.id), events.slice(1, 3).map((event) => event.id));

      response = await admin().get('/v1/admin/audit?actorId=not-a-uuid');
      t.equal(response.statusCode, 400);
      t.type(response.json().detail, 'string');
    });
  });
}
