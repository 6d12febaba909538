import { randomUUID } from 'node:crypto';
import t from 'tap';
import { bearer, buildTestApp, createApiKey, createTestCollection, sessionCookieOf, setupAdmin, testBackends } from '../support/test-app.js';
import { OPEN_ROUTES, ROUTE_TABLE, type RouteRow } from '../support/route-table.js';

const SECOND_ADMIN = { email: 'second@example.com', password: 'second admin password' };
const url = (row: RouteRow) => row.url.replaceAll('{id}', randomUUID()).replaceAll('{name}', 'no-such-collection');
const AUTH_FAILURES = [401, 403];

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const adminCookie = await setupAdmin(app);
    const cookie = adminCookie;
    // Rows that end sessions (logout-all ends every session of its user) run as another admin.
    const created = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie }, payload: SECOND_ADMIN });
    t.equal(created.statusCode, 201);
    const fullKey = await createApiKey(app, cookie, { name: 'full' });
    await createTestCollection(app, { cookie }, { name: 'docs' });
    const pinnedKey = await createApiKey(app, cookie, { name: 'pinned', collection: 'docs' });
    // A valid scope that no route of the table below needs (chat is not built yet).
    const uselessKey = await createApiKey(app, cookie, { name: 'useless', scopes: ['chat:read'] });

    t.test('open routes need no credentials', async (t) => {
      for (const row of OPEN_ROUTES) {
        const response = await app.inject({ method: row.method, url: row.url });
        t.equal(response.statusCode, 200, `${row.method} ${row.url}`);
      }
    });

    for (const row of ROUTE_TABLE) {
      const name = `${row.method} ${row.url} (${typeof row.access === 'string' ? row.access : row.access.scope})`;
      t.test(name, async (t) => {
        const cookie = row.endsSession
          ? sessionCookieOf(await app.inject({ method: 'POST', url: '/v1/auth/login', payload: SECOND_ADMIN }))
          : adminCookie;
        const send = (headers: Record<string, string>) =>
          app.inject({ method: row.method, url: url(row), headers, ...(row.payload !== undefined ? { payload: row.payload as object } : {}) });

        const anonymous = await send({});
        t.equal(anonymous.statusCode, 401, 'no credentials: 401');
        t.type(anonymous.json().detail, 'string');
        t.equal((await send(bearer('svc_sk_unknownkeyunknownkeyunknownkey'))).statusCode, 401, 'unknown key: 401');

        if (row.access === 'session') {
          const withKey = await send(bearer(fullKey.key));
          t.equal(withKey.statusCode, 403, 'an API key on a session-only route: 403');
          t.match(withKey.json().detail, /session/);
          t.notOk(AUTH_FAILURES.includes((await send({ cookie })).statusCode), 'the admin session passes');
          return;
        }
        if (row.access === 'any') {
          t.notOk(AUTH_FAILURES.includes((await send(bearer(uselessKey.key))).statusCode), 'any valid key passes');
          t.notOk(AUTH_FAILURES.includes((await send({ cookie })).statusCode), 'a session passes');
          return;
        }
        if (row.access === 'unpinned') {
          const pinned = await send(bearer(pinnedKey.key));
          t.equal(pinned.statusCode, 403);
          t.equal(pinned.json().detail, 'API key is pinned to collection docs');
          t.notOk(AUTH_FAILURES.includes((await send(bearer(fullKey.key))).statusCode));
          return;
        }
        const missing = await send(bearer(uselessKey.key));
        t.equal(missing.statusCode, 403);
        t.equal(missing.json().detail, `API key missing required scope: ${row.access.scope}`, 'exact detail of spec 5.8');
        const exact = await createApiKey(app, cookie, { name: `exact ${row.access.scope}`, scopes: [row.access.scope] });
        t.notOk(AUTH_FAILURES.includes((await send(bearer(exact.key))).statusCode), 'the exact scope passes');
        const [resource] = row.access.scope.split(':');
        const wildcard = await createApiKey(app, cookie, { name: `wildcard ${resource}`, scopes: [`${resource}:*`] });
        t.notOk(AUTH_FAILURES.includes((await send(bearer(wildcard.key))).statusCode), 'resource:* passes');
        t.notOk(AUTH_FAILURES.includes((await send({ cookie })).statusCode), 'the admin session passes');
      });
    }

    t.test('every authenticated route is in the table', async (t) => {
      const documented = (await app.inject({ url: '/docs/json' })).json() as { paths: Record<string, Record<string, unknown>> };
      const listed = new Set(ROUTE_TABLE.map((row) => `${row.method} ${row.url}`));
      const open = new Set(OPEN_ROUTES.map((row) => `${row.method} ${row.url}`));
      for (const [path, methods] of Object.entries(documented.paths)) {
        for (const method of Object.keys(methods)) {
          const key = `${method.toUpperCase()} ${path}`;
          if (method === 'head' || open.has(key) || path.startsWith('/v1/auth/setup') || path === '/v1/auth/login') continue;
          t.ok(listed.has(key), `${key} has a row in test/support/route-table.ts`);
        }
      }
    });
  });
}
