import t from 'tap';
import { buildTestApp, testBackends } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const { app } = ctx;

    await t.test('GET /docs/json is the OpenAPI 3 document', async (t) => {
      const response = await app.inject({ method: 'GET', url: '/docs/json' });
      t.equal(response.statusCode, 200);
      t.match(String(response.headers['content-type']), /^application\/json/);
      const doc = response.json() as { openapi: string; info: { title: string; version: string }; paths: Record<string, Record<string, unknown>>; components: Record<string, unknown> };
      t.match(doc.openapi, /^3\.\d+\.\d+$/);
      t.type(doc.info.title, 'string');
      t.type(doc.info.version, 'string');
      t.type(doc.paths, 'object');
      t.ok(doc.paths['/v1/auth/login'], 'lists /v1/auth/login');
      t.ok(doc.paths['/v1/auth/login']!.post, 'with its POST');
      t.ok(doc.paths['/v1/admin/api-keys/{id}/rotate'], 'lists /v1/admin/api-keys/{id}/rotate in OpenAPI path syntax');
      t.ok(doc.paths['/v1/admin/api-keys/{id}/rotate']!.post);
      for (const path of ['/v1/auth/setup', '/v1/auth/setup-status', '/v1/auth/preferences', '/v1/admin/users', '/v1/admin/users/{id}', '/v1/admin/api-keys', '/v1/admin/settings', '/v1/admin/audit', '/health', '/health/ready']) {
        t.ok(doc.paths[path], `lists ${path}`);
      }
      t.notOk(Object.keys(doc.paths).some((path) => path.includes(':')), 'no Fastify-style :params');
      t.notOk(doc.paths['/docs/json'], 'the document does not list itself');
      t.ok(doc.paths['/v1/auth/preferences']!.put && doc.paths['/v1/auth/preferences']!.get);
      t.ok(doc.paths['/v1/admin/users/{id}']!.get && doc.paths['/v1/admin/users/{id}']!.patch && doc.paths['/v1/admin/users/{id}']!.delete);
      t.match(doc.components, { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } } });

      const again = await app.inject({ method: 'GET', url: '/docs/json' });
      t.strictSame(again.json(), doc, 'stable across calls');
    });

    await t.test('health endpoints', async (t) => {
      let response = await app.inject({ method: 'GET', url: '/health' });
      t.equal(response.statusCode, 200);
      t.strictSame(response.json(), { status: 'ok' });
      response = await app.inject({ method: 'GET', url: '/health/ready' });
      t.equal(response.statusCode, 200);
      t.equal(response.json().database, backend);
      t.equal(response.json().status, 'ready');
    });
  });

  t.test(`${backend}: readiness after the database is closed`, async (t) => {
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const { app } = ctx;

    let response = await app.inject({ method: 'GET', url: '/health/ready' });
    t.equal(response.statusCode, 200, 'ready while the database is open');

    await ctx.services.db.close();

    const started = Date.now();
    response = await app.inject({ method: 'GET', url: '/health/ready' });
    t.equal(response.statusCode, 503);
    const body = response.json();
    t.type(body.detail, 'string');
    t.ok(body.detail.length > 0);
    t.equal(body.database, backend);
    t.ok(Date.now() - started < 5000, 'answers within the ping timeout');

    response = await app.inject({ method: 'GET', url: '/health' });
    t.equal(response.statusCode, 200, 'liveness does not depend on the database');
    response = await app.inject({ method: 'GET', url: '/health/ready' });
    t.equal(response.statusCode, 503, 'still not ready');
  });
}
