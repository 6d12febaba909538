import t from 'tap';
import { ADMIN, bearer, buildTestApp, createApiKey, setupAdmin, testBackends } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';

const MASTER_KEY = 'test-master-key';
const OPENAI_KEY = 'sk-test-0123456789abcdefPLAINTEXT';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend, { masterKey: MASTER_KEY });
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const cookie = await setupAdmin(app);

    const get = async () => {
      const response = await app.inject({ method: 'GET', url: '/v1/auth/preferences', headers: { cookie } });
      t.equal(response.statusCode, 200, 'GET preferences is 200');
      return response.json() as { data: Record<string, any> };
    };
    const put = (payload: unknown) => app.inject({ method: 'PUT', url: '/v1/auth/preferences', headers: { cookie }, payload: payload as object });
    const storedRow = async () => {
      const rows = await ctx.services.db.fork().getConnection().execute('select preferences, chat_openai_key_sealed from users where email = ?', [ADMIN.email]);
      t.equal(rows.length, 1);
      return rows[0] as { preferences: unknown; chat_openai_key_sealed: string | null };
    };

    await t.test('a new user has exactly {data: {}}', async (t) => {
      const response = await app.inject({ method: 'GET', url: '/v1/auth/preferences', headers: { cookie } });
      t.equal(response.statusCode, 200);
      t.same(response.json(), { data: {} });
      t.strictSame(response.json(), { data: {} });
    });

    await t.test('PUT {data: {...}} and a bare object both merge', async (t) => {
      let response = await put({ data: { sidebar_collapsed: true, default_collection: 'docs' } });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), { data: { sidebar_collapsed: true, default_collection: 'docs' } });

      response = await put({ theme: 'dark' });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), { data: { sidebar_collapsed: true, default_collection: 'docs', theme: 'dark' } });
      t.strictSame(await get(), { data: { sidebar_collapsed: true, default_collection: 'docs', theme: 'dark' } });
    });

    await t.test('deep merge: absent keys kept, nested merge, null stored, arrays replace', async (t) => {
      let response = await put({ data: { layout: { panes: { left: 200, right: 300 }, tabs: ['a', 'b', 'c'] } } });
      t.equal(response.statusCode, 200);

      response = await put({ layout: { panes: { right: 400 }, tabs: ['z'] }, sidebar_collapsed: null });
      t.equal(response.statusCode, 200);
      const expected = {
        sidebar_collapsed: null,
        default_collection: 'docs',
        theme: 'dark',
        layout: { panes: { left: 200, right: 400 }, tabs: ['z'] },
      };
      t.strictSame(response.json(), { data: expected });
      const read = await get();
      t.strictSame(read, { data: expected });
      t.ok(Object.hasOwn(read.data, 'sidebar_collapsed'), 'a key sent as null is kept, as null');

      // An empty patch changes nothing.
      response = await put({ data: {} });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), { data: expected });
    });

    await t.test('chat object: has_openai_key false when no key is stored', async (t) => {
      const response = await put({ chat: { search_mode: 'keyword', top_k: 5 } });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json().data.chat, { search_mode: 'keyword', top_k: 5, has_openai_key: false });
      t.strictSame((await get()).data.chat, { search_mode: 'keyword', top_k: 5, has_openai_key: false });
    });

    await t.test('chat.openai_key is never returned, sealed at rest, cleared by null', async (t) => {
      let response = await put({ data: { chat: { openai_key: OPENAI_KEY, top_k: 8 } } });
      t.equal(response.statusCode, 200);
      t.notMatch(response.body, OPENAI_KEY, 'the key is not echoed');
      t.strictSame(response.json().data.chat, { search_mode: 'keyword', top_k: 8, has_openai_key: true });

      const read = await get();
      t.strictSame(read.data.chat, { search_mode: 'keyword', top_k: 8, has_openai_key: true });
      t.notOk('openai_key' in read.data.chat);
      t.equal(read.data.theme, 'dark', 'other keys untouched');

      const row = await storedRow();
      t.type(row.chat_openai_key_sealed, 'string');
      t.notMatch(row.chat_openai_key_sealed!, OPENAI_KEY, 'the plaintext is not stored');
      t.notMatch(row.chat_openai_key_sealed!, Buffer.from(OPENAI_KEY).toString('base64'), 'nor merely base64-encoded');
      t.notOk(row.chat_openai_key_sealed!.startsWith('plain:'), 'sealed with MASTER_KEY');
      t.equal(ctx.services.secrets.open(row.chat_openai_key_sealed!), OPENAI_KEY, 'the sealed value opens to the key');
      t.notMatch(JSON.stringify(row.preferences), OPENAI_KEY, 'the key is not in the plain preferences');

      // Sending has_openai_key does not forge the derived flag, nor store it.
      response = await put({ chat: { has_openai_key: false } });
      t.equal(response.statusCode, 200);
      t.equal(response.json().data.chat.has_openai_key, true);
      t.notMatch(JSON.stringify((await storedRow()).preferences), 'has_openai_key');

      // Another chat change keeps the key.
      response = await put({ chat: { search_mode: 'hybrid' } });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json().data.chat, { search_mode: 'hybrid', top_k: 8, has_openai_key: true });

      // A wrong type is refused and changes nothing.
      response = await put({ chat: { openai_key: 42 } });
      assertError(t, response, 400, /^chat\.openai_key must be a non-empty string, or null to clear the stored key; it is of type number$/, 'a number');
      t.equal((await get()).data.chat.has_openai_key, true);
      // An empty string is a string: "must be a string or null" told its sender nothing.
      assertError(t, await put({ chat: { openai_key: '' } }), 400, /^chat\.openai_key must be a non-empty string, or null to clear the stored key; it is an empty string$/, 'an empty string');
      t.equal((await get()).data.chat.has_openai_key, true);

      response = await put({ chat: { openai_key: null } });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json().data.chat, { search_mode: 'hybrid', top_k: 8, has_openai_key: false });
      t.equal((await storedRow()).chat_openai_key_sealed, null, 'the sealed key is gone');
      t.strictSame((await get()).data.chat, { search_mode: 'hybrid', top_k: 8, has_openai_key: false });
    });

    await t.test('session only: API key 403, no auth 401', async (t) => {
      const key = await createApiKey(app, cookie);
      for (const method of ['GET', 'PUT'] as const) {
        const payload = method === 'PUT' ? { theme: 'light' } : undefined;
        const withKey = await app.inject({ method, url: '/v1/auth/preferences', headers: bearer(key.key), ...(payload ? { payload } : {}) });
        t.equal(withKey.statusCode, 403, `${method} with an API key`);
        t.type(withKey.json().detail, 'string');
        const anonymous = await app.inject({ method, url: '/v1/auth/preferences', ...(payload ? { payload } : {}) });
        t.equal(anonymous.statusCode, 401, `${method} without auth`);
        t.type(anonymous.json().detail, 'string');
      }
      t.equal((await get()).data.theme, 'dark', 'the refused PUTs changed nothing');
    });

    await t.test('a body that is not an object is 400', async (t) => {
      const before = await get();
      for (const payload of ['[1,2,3]', '"dark"', '42', 'null', 'true', '{"data": 5}', '{"data": [1]}', '{"data": null}']) {
        const response = await app.inject({
          method: 'PUT', url: '/v1/auth/preferences', headers: { cookie, 'content-type': 'application/json' }, payload,
        });
        t.equal(response.statusCode, 400, `body ${payload}`);
        t.type(response.json().detail, 'string', `body ${payload} answers {detail}`);
      }
      t.strictSame(await get(), before, 'nothing changed');
    });

    await t.test('preferences are per user', async (t) => {
      const created = await app.inject({
        method: 'POST', url: '/v1/admin/users', headers: { cookie },
        payload: { email: 'other@example.com', password: 'other-password', role: 'viewer' },
      });
      t.equal(created.statusCode, 201);
      const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'other@example.com', password: 'other-password' } });
      t.equal(login.statusCode, 200);
      const other = login.cookies.find((c) => c.name === 'svc_session')!;
      const otherCookie = `${other.name}=${other.value}`;
      let response = await app.inject({ method: 'GET', url: '/v1/auth/preferences', headers: { cookie: otherCookie } });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), { data: {} });
      response = await app.inject({ method: 'PUT', url: '/v1/auth/preferences', headers: { cookie: otherCookie }, payload: { theme: 'light' } });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), { data: { theme: 'light' } });
      t.equal((await get()).data.theme, 'dark');

      // With other keys beside it, "data" is a preference of that name, not the wrapper.
      response = await app.inject({ method: 'PUT', url: '/v1/auth/preferences', headers: { cookie: otherCookie }, payload: { data: { rows: 20 }, density: 'compact' } });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), { data: { theme: 'light', data: { rows: 20 }, density: 'compact' } });
    });
  });
}
