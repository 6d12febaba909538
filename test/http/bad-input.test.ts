import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { ADMIN, buildTestApp, setupAdmin, testBackends } from '../support/test-app.js';

interface Answer { statusCode: number; body: string; headers: Record<string, unknown>; json(): any }

/** api-contract 1: every error is `{detail: string}`, never a stack trace or an HTML page. */
function assertErrorBody(t: Test, response: Answer, status: number, what: string) {
  t.equal(response.statusCode, status, `${what}: status`);
  t.match(String(response.headers['content-type']), /^application\/json/, `${what}: JSON`);
  let body: any;
  try {
    body = response.json();
  } catch {
    t.fail(`${what}: body is not JSON: ${response.body.slice(0, 200)}`);
    return;
  }
  t.type(body.detail, 'string', `${what}: detail is a string`);
  t.ok(body.detail.length > 0, `${what}: detail is not empty`);
  t.notMatch(response.body, /\bat [^\s]+ \(|node:internal|\.ts:\d+|<html|<!doctype/i, `${what}: no stack trace or HTML`);
  t.notOk('stack' in body, `${what}: no stack field`);
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const { app } = ctx;

    const needsSetup = async () => {
      const response = await app.inject({ method: 'GET', url: '/v1/auth/setup-status' });
      t.equal(response.statusCode, 200);
      return response.json().needs_setup as boolean;
    };

    await t.test('setup refuses bad input and stays open', async (t) => {
      const attempts: Array<[unknown, string]> = [
        [{ email: 'admin@example.com', password: 'short' }, 'short password'],
        [{ email: 'admin@example.com', password: '1234567' }, 'password of 7 characters'],
        [{ email: 'admin@example.com' }, 'missing password'],
        [{ password: 'long-enough-password' }, 'missing email'],
        [{ email: 'admin@example.com', password: 12345678 }, 'password is a number'],
        [{ email: ['admin@example.com'], password: 'long-enough-password' }, 'email is an array'],
        [{ email: 'admin@example.com', password: 'long-enough-password', role: 'viewer' }, 'unknown field'],
        [{ email: 'not an email', password: 'long-enough-password' }, 'bad email'],
        [[ADMIN], 'array body'],
      ];
      for (const [payload, what] of attempts) {
        const response = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: payload as object });
        assertErrorBody(t, response, 400, `setup: ${what}`);
        t.notOk(response.cookies.length, `setup: ${what}: no session cookie`);
      }
      const empty = await app.inject({ method: 'POST', url: '/v1/auth/setup', headers: { 'content-type': 'application/json' }, payload: '' });
      assertErrorBody(t, empty, 400, 'setup: empty JSON body');
      const garbage = await app.inject({ method: 'POST', url: '/v1/auth/setup', headers: { 'content-type': 'application/json' }, payload: '{"email": "a@b.c", "password": ' });
      assertErrorBody(t, garbage, 400, 'setup: malformed JSON');
      const xml = await app.inject({ method: 'POST', url: '/v1/auth/setup', headers: { 'content-type': 'application/xml' }, payload: '<setup/>' });
      assertErrorBody(t, xml, 415, 'setup: XML');
      t.equal(await needsSetup(), true, 'failed setup attempts leave needs_setup true');
    });

    let cookie = '';
    await t.test('setup then succeeds', async (t) => {
      cookie = await setupAdmin(app);
      t.equal(await needsSetup(), false);
      const again = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: { email: 'second@example.com', password: 'long-enough-password' } });
      assertErrorBody(t, again, 409, 'setup a second time');
    });

    const total = async (url: string) => {
      const response = await app.inject({ method: 'GET', url, headers: { cookie } });
      t.equal(response.statusCode, 200);
      return response.json().total as number;
    };

    await t.test('wrong types, missing and unknown fields', async (t) => {
      const keysBefore = await total('/v1/admin/api-keys');
      const usersBefore = await total('/v1/admin/users');
      const cases: Array<[string, string, unknown, string]> = [
        ['POST', '/v1/admin/api-keys', { name: 5 }, 'api key name is a number'],
        ['POST', '/v1/admin/api-keys', {}, 'api key name missing'],
        ['POST', '/v1/admin/api-keys', { name: 'x', bogus: 1 }, 'api key unknown field'],
        ['POST', '/v1/admin/api-keys', { name: '' }, 'api key empty name'],
        ['POST', '/v1/admin/api-keys', { name: 'x', scopes: 'query:read' }, 'scopes is a string'],
        ['POST', '/v1/admin/api-keys', { name: 'x', scopes: ['not a scope'] }, 'malformed scope'],
        ['POST', '/v1/admin/api-keys', { name: 'x', expires_at: 'tomorrow' }, 'expires_at not a timestamp'],
        ['POST', '/v1/admin/api-keys', { name: 'x', collection: 'no spaces allowed' }, 'bad collection name'],
        ['POST', '/v1/admin/api-keys', { name: 'x'.repeat(256) }, 'name too long'],
        ['POST', '/v1/admin/users', { email: 'u@example.com', password: 'short' }, 'user short password'],
        ['POST', '/v1/admin/users', { email: 'u@example.com', password: '1234567' }, 'user password of 7 characters'],
        ['POST', '/v1/admin/users', { email: 'u@example.com', password: true }, 'user password is a boolean'],
        ['POST', '/v1/admin/users', { email: 'u@example.com' }, 'user password missing'],
        ['POST', '/v1/admin/users', { email: 'u@example.com', password: 'long-enough-password', role: 'root' }, 'user unknown role'],
        ['POST', '/v1/admin/users', { email: 'u@example.com', password: 'long-enough-password', is_admin: true }, 'user unknown field'],
        ['POST', '/v1/admin/users', { email: 'u@example.com', password: 'long-enough-password', display_name: 7 }, 'user display_name is a number'],
        ['POST', '/v1/auth/password', { current_password: ADMIN.password, new_password: 'short' }, 'password change too short'],
        ['POST', '/v1/auth/password', { current_password: ADMIN.password, new_password: 1234567890 }, 'new password is a number'],
        ['POST', '/v1/auth/password', { current_password: ADMIN.password }, 'new password missing'],
        ['POST', '/v1/auth/password', { current_password: 'wrong password', new_password: 'long-enough-password' }, 'current password wrong'],
        ['POST', '/v1/auth/login', { email: ADMIN.email }, 'login without password'],
        ['POST', '/v1/auth/login', { email: ADMIN.email, password: ADMIN.password, remember: true }, 'login unknown field'],
        ['PATCH', '/v1/admin/settings', { values: { query_cache_ttl_s: 'ten' } }, 'setting wrong type'],
        ['GET', '/v1/admin/users?limit=many', undefined, 'limit not a number'],
        ['GET', '/v1/admin/api-keys/not-a-uuid', undefined, 'id not a uuid'],
      ];
      for (const [method, url, payload, what] of cases) {
        const response = await app.inject({ method: method as 'POST', url, headers: { cookie }, ...(payload === undefined ? {} : { payload: payload as object }) });
        assertErrorBody(t, response, 400, what);
      }
      t.equal(await total('/v1/admin/api-keys'), keysBefore, 'no key was created');
      t.equal(await total('/v1/admin/users'), usersBefore, 'no user was created');
      const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN });
      t.equal(login.statusCode, 200, 'the refused password changes left the password as it was');
      t.equal((await app.inject({ method: 'GET', url: '/v1/auth/me', headers: { cookie } })).statusCode, 200, 'and the session alive');
    });

    await t.test('bodies that are not JSON', async (t) => {
      const usersBefore = await total('/v1/admin/users');
      const garbage = randomBytes(1024 * 1024);
      let response = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie, 'content-type': 'application/json' }, payload: garbage });
      assertErrorBody(t, response, 400, '1 MB of random bytes as JSON');
      response = await app.inject({ method: 'POST', url: '/v1/auth/login', headers: { 'content-type': 'application/json' }, payload: garbage });
      assertErrorBody(t, response, 400, '1 MB of random bytes as JSON to an open route');
      const garbageText = randomBytes(768 * 1024).toString('base64');
      response = await app.inject({ method: 'PUT', url: '/v1/auth/preferences', headers: { cookie, 'content-type': 'application/json' }, payload: garbageText });
      assertErrorBody(t, response, 400, '1 MB of base64 text as JSON');

      for (const payload of ['{"email": "x@example.com",', '{email: "x"}', "{'a': 1}", '{"a": 1}}', 'undefined', '\u0000']) {
        response = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie, 'content-type': 'application/json' }, payload });
        assertErrorBody(t, response, 400, `malformed JSON ${JSON.stringify(payload)}`);
      }
      response = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie, 'content-type': 'application/json' }, payload: '' });
      assertErrorBody(t, response, 400, 'empty JSON body');

      const body = JSON.stringify({ email: 'typed@example.com', password: 'long-enough-password' });
      for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/xml', 'text/xml', 'application/x-www-form-urlencoded']) {
        response = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie, 'content-type': type }, payload: body });
        assertErrorBody(t, response, 415, `${type} body`);
        t.equal(response.json().detail, `Content-Type ${type.split(';')[0]} is not read by POST /v1/admin/users: send application/json`, `${type}: says what to send`);
      }
      response = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie, 'content-type': 'application/xml' }, payload: '<user><email>x@example.com</email></user>' });
      assertErrorBody(t, response, 415, 'an XML document');
      t.equal(await total('/v1/admin/users'), usersBefore, 'no user was created');
    });

    await t.test('unknown routes and wrong methods', async (t) => {
      let response = await app.inject({ method: 'GET', url: '/v1/no/such/route' });
      assertErrorBody(t, response, 404, 'unknown route');
      response = await app.inject({ method: 'POST', url: '/v2/auth/login', payload: ADMIN });
      assertErrorBody(t, response, 404, 'unknown version');
      response = await app.inject({ method: 'GET', url: '/nope.html', headers: { accept: 'text/html' } });
      assertErrorBody(t, response, 404, 'unknown route asked for HTML');

      response = await app.inject({ method: 'DELETE', url: '/v1/auth/setup-status' });
      assertErrorBody(t, response, 405, 'DELETE /v1/auth/setup-status');
      t.equal(response.headers.allow, 'GET');
      response = await app.inject({ method: 'GET', url: '/v1/auth/login' });
      assertErrorBody(t, response, 405, 'GET /v1/auth/login');
      t.equal(response.headers.allow, 'POST');
      response = await app.inject({ method: 'PUT', url: '/v1/admin/users/00000000-0000-4000-8000-000000000000', headers: { cookie }, payload: {} });
      assertErrorBody(t, response, 405, 'PUT on a user');
      t.strictSame(String(response.headers.allow).split(', ').sort(), ['DELETE', 'GET', 'PATCH']);
      response = await app.inject({ method: 'DELETE', url: '/health' });
      assertErrorBody(t, response, 405, 'DELETE /health');
      t.equal(response.headers.allow, 'GET');
      // The query string is not part of the path the methods are looked up for, nor of the detail.
      response = await app.inject({ method: 'DELETE', url: '/v1/auth/setup-status?verbose=1' });
      assertErrorBody(t, response, 405, 'DELETE /v1/auth/setup-status with a query string');
      t.equal(response.headers.allow, 'GET');
      t.equal(response.json().detail, 'Method DELETE is not allowed on /v1/auth/setup-status; allowed: GET');
      response = await app.inject({ method: 'GET', url: '/v1/nope?page=2' });
      t.same(response.json(), { detail: 'Route GET /v1/nope not found', code: 'not_found' }, 'unknown route with a query string');
    });

    await t.test('a path segment a static route owns is not a value of its :param sibling: 405 with the static route\'s methods', async (t) => {
      const created = await app.inject({ method: 'POST', url: '/v1/collections', headers: { cookie }, payload: { name: 'static-siblings' } });
      t.equal(created.statusCode, 201, created.body);
      const cases: Array<{ method: 'GET' | 'PUT' | 'PATCH' | 'DELETE'; url: string; headers?: Record<string, string> }> = [
        { method: 'GET', url: '/v1/collections/static-siblings/documents/batch', headers: { cookie } },
        { method: 'DELETE', url: '/v1/collections/static-siblings/documents/batch', headers: { cookie } },
        { method: 'PUT', url: '/v1/collections/static-siblings/documents/batch', headers: { cookie } },
        { method: 'GET', url: '/v1/collections/static-siblings/documents/batch/', headers: { cookie } },
        { method: 'GET', url: '/v1/collections/static-siblings/documents/batch' },
        { method: 'GET', url: '/v1/admin/embedding-presets/test', headers: { cookie } },
        { method: 'PATCH', url: '/v1/admin/embedding-presets/test', headers: { cookie } },
        { method: 'DELETE', url: '/v1/admin/embedding-presets/test' },
      ];
      for (const { method, url, headers } of cases) {
        const what = `${method} ${url}${headers ? '' : ' without credentials'}`;
        const response = await app.inject({ method, url, ...(headers ? { headers } : {}) });
        assertErrorBody(t, response, 405, what);
        t.equal(response.headers.allow, 'POST', `${what}: only the static route's method is allowed`);
        t.match(response.json(), { code: 'method_not_allowed', detail: /; allowed: POST$/ }, `${what}: the detail names it`);
      }
      const head = await app.inject({ method: 'HEAD', url: '/v1/collections/static-siblings/documents/batch', headers: { cookie } });
      t.equal(head.statusCode, 405, 'HEAD (the implicit twin of GET) too');
      t.equal(head.headers.allow, 'POST');

      // The :param siblings still answer for every other value.
      const unknownDocument = await app.inject({ url: '/v1/collections/static-siblings/documents/00000000-0000-4000-8000-000000000000', headers: { cookie } });
      assertErrorBody(t, unknownDocument, 404, 'an unknown document id');
      assertErrorBody(t, await app.inject({ url: '/v1/collections/static-siblings/documents/batches', headers: { cookie } }), 400, 'a near miss is a bad id');
      assertErrorBody(t, await app.inject({ url: '/v1/admin/embedding-presets/00000000-0000-4000-8000-000000000000', headers: { cookie } }), 404, 'an unknown preset id');
      t.equal((await app.inject({ method: 'POST', url: '/v1/collections/static-siblings/documents/batch' })).statusCode, 401, 'the static route itself is reached');
    });

    await t.test('a NUL character in the URL and an offset past any list', async (t) => {
      const created = await app.inject({ method: 'POST', url: '/v1/collections', headers: { cookie }, payload: { name: 'nul-checks' } });
      t.equal(created.statusCode, 201, created.body);
      for (const url of ['/v1/collections/nul-checks/documents?q=%00', '/v1/collections/nul-checks/documents?q=a%00b', '/v1/collections?name=%00', '/v1/admin/users?email=%00']) {
        const response = await app.inject({ method: 'GET', url, headers: { cookie } });
        assertErrorBody(t, response, 400, url);
        t.match(response.json().detail, /NUL/, `${url}: names the NUL character`);
      }
      for (const url of ['/v1/collections/nul-checks/documents?offset=1e20', '/v1/collections?offset=9223372036854775808', '/v1/admin/users?offset=2147483648']) {
        const response = await app.inject({ method: 'GET', url, headers: { cookie } });
        assertErrorBody(t, response, 400, url);
        t.match(response.json().detail, /offset/, `${url}: names the offset`);
      }
      const last = await app.inject({ method: 'GET', url: '/v1/collections/nul-checks/documents?offset=2147483647', headers: { cookie } });
      t.equal(last.statusCode, 200, 'the largest offset is an empty page');
      t.same(last.json().data, []);
      t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/nul-checks', headers: { cookie } })).statusCode, 204);
    });

    await t.test('paths the router refuses (bad percent-encoding, an overlong segment) answer {detail}', async (t) => {
      for (const url of ['/v1/collections/%ff', '/v1/documents/%ff', '/health/%ff']) {
        const response = await app.inject({ method: 'GET', url, headers: { cookie } });
        assertErrorBody(t, response, 400, url);
        t.equal(response.json().code, 'bad_url');
      }
      const long = await app.inject({ method: 'GET', url: `/v1/collections/${'a'.repeat(5000)}`, headers: { cookie } });
      assertErrorBody(t, long, 414, 'a 5,000-character collection name');
      t.match(long.json().detail, /longer than 100 characters/);
      t.equal((await app.inject({ method: 'GET', url: `/v1/collections/${'a'.repeat(64)}`, headers: { cookie } })).statusCode, 404, 'the longest valid name is looked up');
    });

    await t.test('text the database cannot store (NUL, half a surrogate pair): 400 naming where, nothing created', async (t) => {
      const before = { keys: await total('/v1/admin/api-keys'), users: await total('/v1/admin/users'), collections: await total('/v1/collections') };
      for (const [bad, what] of [['a\u0000b', 'NUL'], ['a\uD83Db', 'half a surrogate pair']] as const) {
        const cases: Array<[string, string, unknown, RegExp]> = [
          ['POST', '/v1/collections', { name: 'unstorable', description: bad }, /body\.description/],
          ['POST', '/v1/collections', { name: 'unstorable', metadata_schema: { type: 'object', description: bad } }, /body\.metadata_schema\.description/],
          ['POST', '/v1/admin/api-keys', { name: bad }, /body\.name/],
          ['POST', '/v1/admin/users', { email: 'unstorable@example.com', password: 'long-enough-password', display_name: bad }, /body\.display_name/],
          ['POST', '/v1/auth/login', { email: bad, password: 'long-enough-password' }, /body\.email/],
          ['PUT', '/v1/auth/preferences', { [bad]: 'dark' }, /body \(a field name\)/],
        ];
        for (const [method, url, payload, where] of cases) {
          const response = await app.inject({ method: method as 'POST', url, headers: { cookie }, payload: payload as object });
          assertErrorBody(t, response, 400, `${what}: ${method} ${url}`);
          t.match(response.json().detail, where, `${what}: ${method} ${url} names where`);
        }
      }
      t.same({ keys: await total('/v1/admin/api-keys'), users: await total('/v1/admin/users'), collections: await total('/v1/collections') }, before, 'nothing was created');
    });

    await t.test('after all that the server is healthy and consistent', async (t) => {
      let response = await app.inject({ method: 'GET', url: '/health' });
      t.equal(response.statusCode, 200);
      response = await app.inject({ method: 'GET', url: '/health/ready' });
      t.equal(response.statusCode, 200);
      t.equal(await total('/v1/admin/users'), 1, 'only the admin of setup exists');
      t.equal(await total('/v1/admin/api-keys'), 0);
      response = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie }, payload: { email: 'ok@example.com', password: 'long-enough-password' } });
      t.equal(response.statusCode, 201, 'good requests still work');
      t.equal(await total('/v1/admin/users'), 2);
    });
  });

  t.test(`${backend}: body limit`, async (t) => {
    const ctx = await buildTestApp(backend, { bodyLimitBytes: 64 * 1024 });
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const cookie = await setupAdmin(app);

    const big = JSON.stringify({ email: 'big@example.com', password: 'long-enough-password', display_name: 'x'.repeat(100 * 1024) });
    let response = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie, 'content-type': 'application/json' }, payload: big });
    assertErrorBody(t, response, 413, '100 KB body to an admin route');
    t.equal(response.json().detail, 'The request body is larger than 65536 bytes, the limit (BODY_LIMIT_BYTES)', 'the detail states the limit');
    response = await app.inject({ method: 'POST', url: '/v1/auth/login', headers: { 'content-type': 'application/json' }, payload: big });
    assertErrorBody(t, response, 413, '100 KB body to an open route');
    response = await app.inject({ method: 'PUT', url: '/v1/auth/preferences', headers: { cookie }, payload: { blob: 'y'.repeat(100 * 1024) } });
    assertErrorBody(t, response, 413, '100 KB of preferences');

    // Just under the limit is accepted.
    response = await app.inject({ method: 'PUT', url: '/v1/auth/preferences', headers: { cookie }, payload: { blob: 'y'.repeat(60 * 1024) } });
    t.equal(response.statusCode, 200);

    const users = await app.inject({ method: 'GET', url: '/v1/admin/users', headers: { cookie } });
    t.equal(users.json().total, 1, 'the refused body created no user');
    t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
  });
}
