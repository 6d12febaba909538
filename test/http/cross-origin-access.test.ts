/**
 * CORS (CORS_ORIGINS): a web app on another origin calls the API from the browser. Without the
 * headers the browser keeps every response from the page; with them, listed origins may also use
 * the session cookie, and `*` any origin with API keys only.
 */
import t from 'tap';
import { ADMIN, buildTestApp, createApiKey, setupAdmin } from '../support/test-app.js';

const APP_ORIGIN = 'http://localhost:5173';
const OTHER_ORIGIN = 'https://elsewhere.example';
/** What a browser sends before a JSON POST with an API key. */
const preflight = (origin: string) => ({
  method: 'OPTIONS' as const,
  url: '/v1/collections',
  headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
});

t.test('without CORS_ORIGINS no origin is allowed (as before)', async (t) => {
  const ctx = await buildTestApp('pglite');
  t.teardown(() => ctx.close());
  const { app } = ctx;
  const cookie = await setupAdmin(app);
  const read = await app.inject({ url: '/v1/collections', headers: { cookie, origin: APP_ORIGIN } });
  t.equal(read.statusCode, 200);
  t.notOk(read.headers['access-control-allow-origin'], 'no CORS header: the browser keeps the response from the page');
  const answer = await app.inject(preflight(APP_ORIGIN));
  t.notOk(answer.headers['access-control-allow-origin'], 'a preflight is not answered for CORS');
  t.equal(answer.statusCode, 405, 'OPTIONS is no method of the route');
});

t.test('listed origins: preflights, API keys, the session cookie, and headers on refusals too', async (t) => {
  const ctx = await buildTestApp('pglite', { corsOrigins: [APP_ORIGIN] });
  t.teardown(() => ctx.close());
  const { app } = ctx;
  const cookie = await setupAdmin(app);
  const { key } = await createApiKey(app, cookie, { name: 'web app' });

  const allowed = await app.inject(preflight(APP_ORIGIN));
  t.equal(allowed.statusCode, 204, allowed.body);
  t.equal(allowed.headers['access-control-allow-origin'], APP_ORIGIN);
  t.equal(allowed.headers['access-control-allow-credentials'], 'true');
  t.match(allowed.headers['access-control-allow-methods'], /\bPOST\b/);
  t.match(allowed.headers['access-control-allow-methods'], /\bDELETE\b/);
  t.match(allowed.headers['access-control-allow-headers'], /authorization/);
  t.match(allowed.headers['access-control-allow-headers'], /idempotency-key/);
  t.equal(allowed.headers['access-control-max-age'], '600');
  t.notOk((await app.inject(preflight(OTHER_ORIGIN))).headers['access-control-allow-origin'], 'an origin not listed is not allowed');

  const created = await app.inject({ method: 'POST', url: '/v1/collections', headers: { authorization: `Bearer ${key}`, origin: APP_ORIGIN }, payload: { name: 'from-the-browser' } });
  t.equal(created.statusCode, 201, created.body);
  t.equal(created.headers['access-control-allow-origin'], APP_ORIGIN);
  t.match(created.headers.vary, /origin/i, 'caches keep answers to different origins apart');
  t.match(created.headers['access-control-expose-headers'], /retry-after/, 'the page may read Retry-After (503, 429)');

  const refused = await app.inject({ url: '/v1/collections', headers: { origin: APP_ORIGIN } });
  t.equal(refused.statusCode, 401);
  t.equal(refused.headers['access-control-allow-origin'], APP_ORIGIN, 'a refusal carries the headers: the page can read its detail');

  const withCookie = await app.inject({ method: 'POST', url: '/v1/collections', headers: { cookie, origin: APP_ORIGIN }, payload: { name: 'from-the-admin-ui' } });
  t.equal(withCookie.statusCode, 201, `a listed origin may change things with the session cookie: ${withCookie.body}`);
  const login = await app.inject({ method: 'POST', url: '/v1/auth/login', headers: { origin: APP_ORIGIN }, payload: ADMIN });
  t.equal(login.statusCode, 200, `and log in from it: ${login.body}`);
  const foreign = await app.inject({ method: 'POST', url: '/v1/collections', headers: { cookie, origin: OTHER_ORIGIN }, payload: { name: 'from-elsewhere' } });
  t.equal(foreign.statusCode, 403, 'another origin still may not use the cookie');
  t.match(foreign.json().detail, /Cross-origin request refused/);
  t.notOk(foreign.headers['access-control-allow-origin']);
  // What a sandboxed frame or a page opened from a file sends: an opaque origin, not a URL.
  const opaque = await app.inject({ method: 'POST', url: '/v1/collections', headers: { cookie, origin: 'null' }, payload: { name: 'from-a-sandbox' } });
  t.equal(opaque.statusCode, 403, 'nor an opaque origin ("null")');
  t.match(opaque.json().detail, /Cross-origin request refused/);
  t.equal((await app.inject({ url: '/v1/collections/from-a-sandbox', headers: { cookie } })).statusCode, 404, 'nothing was created');
});

t.test('CORS_ORIGINS=*: any origin with API keys, never the session cookie', async (t) => {
  const ctx = await buildTestApp('pglite', { corsOrigins: '*' });
  t.teardown(() => ctx.close());
  const { app } = ctx;
  const cookie = await setupAdmin(app);
  const { key } = await createApiKey(app, cookie, { name: 'public demo' });
  const answer = await app.inject(preflight(OTHER_ORIGIN));
  t.equal(answer.headers['access-control-allow-origin'], '*');
  t.notOk(answer.headers['access-control-allow-credentials'], 'no credentials: browsers send no cookie to a wildcard');
  const read = await app.inject({ url: '/v1/collections', headers: { authorization: `Bearer ${key}`, origin: OTHER_ORIGIN } });
  t.equal(read.statusCode, 200);
  t.equal(read.headers['access-control-allow-origin'], '*');
  const withCookie = await app.inject({ method: 'POST', url: '/v1/collections', headers: { cookie, origin: OTHER_ORIGIN }, payload: { name: 'forged' } });
  t.equal(withCookie.statusCode, 403, 'a cookie sent from another origin is refused as before');
});
