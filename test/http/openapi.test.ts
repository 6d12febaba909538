import t from 'tap';
import type { App } from '../../src/app.js';
import { startProviderFake } from '../support/provider-fakes.js';
import { ADMIN, adminTestApp, bearer, buildTestApp, createApiKey, createTestCollection, multipartUpload, sessionCookieOf, testBackends } from '../support/test-app.js';

const PROVIDER_KEY = 'sk-openapi-provider-key-0123456789';

interface Operation {
  security?: unknown[];
  parameters?: Array<{ in: string; name: string; required: boolean; schema: { default?: unknown } }>;
  requestBody?: { required?: boolean; content: Record<string, { schema: { properties: Record<string, any>; required?: string[]; additionalProperties?: unknown } }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
}
interface OpenApiDocument { security: unknown[]; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, any> } }

async function openApiDocument(app: App): Promise<OpenApiDocument> {
  return (await app.inject({ method: 'GET', url: '/docs/json' })).json();
}

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
      const query = doc.paths['/v1/collections/{name}/query']!.post as { requestBody: { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } } };
      t.same(query.requestBody.content['application/json'].schema.properties.search_mode, { type: 'string', enum: ['semantic', 'keyword', 'hybrid'] },
        'an enumeration is one string schema with its values (Swagger UI shows a choice; client generators make an enum)');

      const unsummarised = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods as Record<string, { summary?: string }>)
        .filter(([, operation]) => !operation.summary?.trim()).map(([method]) => `${method.toUpperCase()} ${path}`));
      t.strictSame(unsummarised, [], 'every operation has a summary');
      const documents503 = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods as Record<string, { responses: Record<string, unknown> }>)
        .filter(([, operation]) => '503' in operation.responses).map(([method]) => `${method.toUpperCase()} ${path}`));
      t.strictSame(documents503.length, Object.values(doc.paths).flatMap((methods) => Object.keys(methods)).length - 1, 'every operation but liveness documents 503 (the database unavailable)');
      t.notOk('503' in (doc.paths['/health']!.get as { responses: Record<string, unknown> }).responses, 'liveness never asks the database');

      const again = await app.inject({ method: 'GET', url: '/docs/json' });
      t.strictSame(again.json(), doc, 'stable across calls');
    });

    await t.test('GET /docs is Swagger UI on the document, with no credentials', async (t) => {
      const page = await app.inject({ method: 'GET', url: '/docs' });
      t.equal(page.statusCode, 200);
      t.match(String(page.headers['content-type']), /^text\/html/);
      t.match(page.body, /<script src="\/docs\/static\/swagger-ui-bundle\.js"/, 'the Swagger UI page');
      const initializer = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
      t.equal(initializer.statusCode, 200);
      t.match(initializer.body, "url: resolveUrl('./json')", 'which reads /docs/json');
      for (const asset of ['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-ui.css']) {
        t.equal((await app.inject({ method: 'GET', url: asset })).statusCode, 200, `serves ${asset} itself (no CDN: the service may run offline)`);
      }
      const yaml = await app.inject({ method: 'GET', url: '/docs/yaml' });
      t.equal(yaml.statusCode, 200);
      t.match(yaml.body, /^openapi: 3\.\d+\.\d+$/m, 'the document as YAML too');
      t.match((await app.inject({ method: 'GET', url: '/docs/missing' })).json(), { detail: 'Route GET /docs/missing not found', code: 'not_found' });
      const missingAsset = await app.inject({ method: 'GET', url: '/docs/static/missing.js' });
      t.equal(missingAsset.statusCode, 404, 'a file it does not have is a 404 (it was a 405 saying GET is not allowed, allowed: GET)');
      t.same(missingAsset.json(), { detail: 'GET /docs/static/missing.js found nothing', code: 'not_found' });
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

for (const backend of testBackends()) {
  t.test(`${backend}: each operation documents the statuses its handler answers`, async (t) => {
    const { app, cookie } = await adminTestApp(t, backend);
    const doc = await openApiDocument(app);
    const admin = { cookie };
    const operation = (method: string, path: string) => doc.paths[path]![method.toLowerCase()]!;
    const statuses = (method: string, path: string) => Object.keys(operation(method, path).responses).map(Number);
    const observed = new Map<string, Set<number>>();

    /** Sends the request, checks its status is documented, remembers 2xx answers per operation. */
    const call = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, url: string, options: { payload?: unknown; headers?: Record<string, string> } = {}) => {
      const response = await app.inject({ method, url, headers: options.headers ?? admin, ...(options.payload === undefined ? {} : { payload: options.payload as object }) });
      t.ok(statuses(method, path).includes(response.statusCode), `${method} ${path}: ${response.statusCode} is documented (${statuses(method, path).join(', ')}); ${response.body.slice(0, 200)}`);
      if (response.statusCode < 300) observed.set(`${method} ${path}`, (observed.get(`${method} ${path}`) ?? new Set()).add(response.statusCode));
      return response;
    };
    const upload = (files: Array<{ filename: string; content: string }>) => multipartUpload(files.map((file) => ({ ...file, contentType: 'text/plain' })));

    await call('GET', '/health', '/health', { headers: {} });
    await call('POST', '/v1/collections', '/v1/collections', { payload: { name: 'documented' } });
    await call('GET', '/v1/collections', '/v1/collections');
    await call('PATCH', '/v1/collections/{name}', '/v1/collections/documented', { payload: { description: 'statuses' } });
    const single = upload([{ filename: 'one.txt', content: 'one document' }]);
    await call('POST', '/v1/collections/{name}/documents', '/v1/collections/documented/documents', { payload: single.payload, headers: { ...admin, ...single.headers } });
    await call('POST', '/v1/collections/{name}/documents', '/v1/collections/documented/documents', { payload: single.payload, headers: { ...admin, ...single.headers } });
    const batch = upload([{ filename: 'two.txt', content: 'two' }, { filename: 'three.txt', content: 'three' }]);
    await call('POST', '/v1/collections/{name}/documents/batch', '/v1/collections/documented/documents/batch', { payload: batch.payload, headers: { ...admin, ...batch.headers } });
    const session = (await call('POST', '/v1/collections/{name}/uploads', '/v1/collections/documented/uploads')).json().id as string;
    const files = upload([{ filename: 'four.txt', content: 'four' }]);
    await call('PUT', '/v1/collections/{name}/uploads/{id}/files', `/v1/collections/documented/uploads/${session}/files`, { payload: files.payload, headers: { ...admin, ...files.headers } });
    await call('POST', '/v1/collections/{name}/uploads/{id}/complete', `/v1/collections/documented/uploads/${session}/complete`);
    const cancelled = (await call('POST', '/v1/collections/{name}/uploads', '/v1/collections/documented/uploads')).json().id as string;
    await call('DELETE', '/v1/collections/{name}/uploads/{id}', `/v1/collections/documented/uploads/${cancelled}`);
    await call('POST', '/v1/collections/{name}/reprocess', '/v1/collections/documented/reprocess');
    const key = (await call('POST', '/v1/admin/api-keys', '/v1/admin/api-keys', { payload: { name: 'documented' } })).json();
    await call('DELETE', '/v1/admin/api-keys/{id}', `/v1/admin/api-keys/${key.id}`);
    await call('GET', '/v1/usage', '/v1/usage');
    await call('POST', '/v1/collections', '/v1/collections', { payload: { name: 'documented-doomed' } });
    await call('DELETE', '/v1/collections/{name}', '/v1/collections/documented-doomed');
    const login = await call('POST', '/v1/auth/login', '/v1/auth/login', { payload: ADMIN, headers: {} });
    await call('POST', '/v1/auth/logout', '/v1/auth/logout', { headers: { cookie: sessionCookieOf(login) } });

    t.strictSame(Object.fromEntries([...observed].map(([name, seen]) => [name, [...seen].sort()])), Object.fromEntries([...observed.keys()].map((name) => {
      const [method, path] = name.split(' ') as [string, string];
      return [name, statuses(method, path).filter((status) => status < 300)];
    })), 'each sampled operation documents exactly the success statuses it answered');

    // Errors the sampled handlers answer are documented, with the {detail} body.
    const reader = await createApiKey(app, cookie, { name: 'reader', scopes: ['collection:read'] });
    const exe = multipartUpload([{ filename: 'x.exe', content: Buffer.from([0x4d, 0x5a, 0x90, 0x00]), contentType: 'application/x-msdownload' }]);
    const errors: Array<[number, () => Promise<{ statusCode: number }>]> = [
      [404, () => call('GET', '/v1/collections/{name}', '/v1/collections/no-such-collection')],
      [404, () => call('POST', '/v1/query', '/v1/query', { payload: { query: 'otters', collections: ['documented', 'no-such-collection'] } })],
      [409, () => call('POST', '/v1/collections', '/v1/collections', { payload: { name: 'documented' } })],
      [400, () => call('POST', '/v1/collections', '/v1/collections', { payload: { name: 'bad name!' } })],
      [401, () => call('GET', '/v1/collections', '/v1/collections', { headers: {} })],
      [403, () => call('GET', '/v1/admin/users', '/v1/admin/users', { headers: bearer(reader.key) })],
      [409, () => call('POST', '/v1/auth/setup', '/v1/auth/setup', { payload: ADMIN, headers: {} })],
      [401, () => call('POST', '/v1/auth/login', '/v1/auth/login', { payload: { ...ADMIN, password: 'not the password' }, headers: {} })],
      [415, () => call('POST', '/v1/collections/{name}/documents', '/v1/collections/documented/documents', { payload: exe.payload, headers: { ...admin, ...exe.headers } })],
    ];
    for (const [status, send] of errors) t.equal((await send()).statusCode, status);
    const notFound = operation('GET', '/v1/collections/{name}').responses['404']!;
    t.strictSame(notFound.content, { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } }, 'errors are {detail, code?, errors?}');
    t.match(doc.components.schemas.Error, { type: 'object', required: ['detail'], properties: { detail: { type: 'string' }, code: { type: 'string' }, errors: { type: 'array' } } });
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, { responses }] of Object.entries(methods)) {
        t.ok(Object.values(responses).every((response) => response.description.length > 0), `${method} ${path}: every status is described`);
      }
    }
  });

  t.test(`${backend}: parameters with defaults are optional, open routes need no credentials, bodies the schemas cannot say are documented`, async (t) => {
    const { app, cookie } = await adminTestApp(t, backend);
    const doc = await openApiDocument(app);
    const parameter = (path: string, name: string) => doc.paths[path]!.get!.parameters!.find((candidate) => candidate.name === name)!;

    for (const path of ['/v1/collections', '/v1/admin/users', '/v1/embeddings/models', '/v1/collections/{name}/documents', '/v1/collections/{name}/documents/{id}/chunks', '/v1/collections/{name}/uploads/{id}']) {
      t.match(parameter(path, 'limit'), { in: 'query', required: false, schema: { default: 50 } }, `${path}: limit is optional, 50 by default`);
      t.match(parameter(path, 'offset'), { in: 'query', required: false, schema: { default: 0 } }, `${path}: offset is optional, 0 by default`);
    }
    for (const path of ['/v1/usage', '/v1/status/usage', '/v1/collections/{name}/analytics']) {
      t.match(parameter(path, 'window_days'), { in: 'query', required: false, schema: { default: 30 } }, `${path}: window_days is optional, 30 by default`);
    }
    t.match(parameter('/v1/collections/{name}/documents/{id}/chunks', 'id'), { in: 'path', required: true }, 'path parameters stay required');
    const list = (await app.inject({ url: '/v1/collections', headers: { cookie } })).json();
    t.match(list, { limit: 50, offset: 0 }, 'and the defaults still apply');
    t.equal((await app.inject({ url: '/v1/usage', headers: { cookie } })).json().window_days, 30);

    const open = [['get', '/health'], ['get', '/health/ready'], ['get', '/v1/auth/setup-status'], ['post', '/v1/auth/setup'], ['post', '/v1/auth/login']] as const;
    for (const [method, path] of open) t.strictSame(doc.paths[path]![method]!.security, [], `${method.toUpperCase()} ${path}: no credentials`);
    const openOperations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).filter(([, op]) => op.security?.length === 0).map(([method]) => `${method} ${path}`));
    t.strictSame(openOperations.sort(), open.map(([method, path]) => `${method} ${path}`).sort(), 'and no other operation');
    t.notOk('security' in doc.paths['/v1/collections']!.get!, 'the others keep the global requirement');
    t.ok(doc.security.length > 0);

    const form = (path: string, method = 'post') => doc.paths[path]![method]!.requestBody!.content['multipart/form-data']!.schema;
    t.match(form('/v1/collections/{name}/documents'), {
      required: ['file'],
      properties: { file: { type: 'string', format: 'binary' }, metadata: { type: 'string' }, on_duplicate: {} },
    }, 'single upload: one file, optional metadata (a JSON string) and on_duplicate');
    t.match(form('/v1/collections/{name}/documents/batch'), {
      required: ['file'],
      properties: { file: { type: 'array', items: { type: 'string', format: 'binary' } }, metadata: { type: 'string' }, on_duplicate: {} },
    }, 'batch: several files');
    t.match(form('/v1/collections/{name}/uploads/{id}/files', 'put'), { required: ['file'], properties: { file: { type: 'array', items: { format: 'binary' } } } });
    t.strictSame(Object.keys(form('/v1/collections/{name}/uploads/{id}/files', 'put').properties), ['file'], 'session files: files only');
    const bare = multipartUpload([{ filename: 'a.txt', content: 'still read as a stream', contentType: 'text/plain' }], { on_duplicate: 'keep' });
    await app.inject({ method: 'POST', url: '/v1/collections', headers: { cookie }, payload: { name: 'forms' } });
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections/forms/documents', headers: { cookie, ...bare.headers }, payload: bare.payload })).statusCode, 202, 'the documented form is not validated');

    const session = doc.paths['/v1/collections/{name}/uploads']!.post!;
    t.equal(session.requestBody!.required, false, 'opening an upload session takes no body');
    t.notOk('x-optional-body' in session, 'the marker is not left in the document');
    t.equal(doc.paths['/v1/collections']!.post!.requestBody!.required, true, 'other bodies stay required');
    const opened = await app.inject({ method: 'POST', url: '/v1/collections/forms/uploads', headers: { cookie } });
    t.equal(opened.statusCode, 201, 'and the service agrees');
    const update = doc.paths['/v1/collections/{name}']!.patch!.requestBody!.content['application/json']!.schema;
    t.equal(update.additionalProperties, false, 'a collection update takes the updatable fields only');
    t.ok(['description', 'metadata', 'default_top_k', 'reranking_enabled'].every((field) => field in update.properties));
    t.notOk('dimension' in update.properties || 'name' in update.properties, 'fixed fields are not listed');
    const unknown = await app.inject({ method: 'PATCH', url: '/v1/collections/forms', headers: { cookie }, payload: { foo: 1 } });
    t.equal(unknown.json().detail, 'Unknown field: foo', 'and the service still names the field');
    const fixed = await app.inject({ method: 'PATCH', url: '/v1/collections/forms', headers: { cookie }, payload: { dimension: 8 } });
    t.match(fixed.json().detail, /^Field dimension cannot be updated: /);
  });
}

for (const backend of testBackends()) {
  t.test(`${backend}: session-only routes document the session alone, and the cookie's name is the setting`, async (t) => {
    const { app, cookie } = await adminTestApp(t, backend);
    const doc = await openApiDocument(app);
    const sessionOnly = [['get', '/v1/admin/settings'], ['post', '/v1/admin/api-keys'], ['get', '/v1/admin/vector-storage'], ['post', '/v1/auth/logout'], ['put', '/v1/auth/preferences']] as const;
    for (const [method, path] of sessionOnly) t.strictSame(doc.paths[path]![method]!.security, [{ session: [] }], `${method.toUpperCase()} ${path}: the session only`);
    for (const [method, path] of [['post', '/v1/collections/{name}/query'], ['get', '/v1/collections'], ['get', '/v1/auth/whoami']] as const) {
      t.notOk('security' in doc.paths[path]![method]!, `${method.toUpperCase()} ${path}: an API key or a session (the global requirement)`);
    }

    // Each documented session-only GET without parameters refuses a key that has every scope, and the others take it.
    const { key } = await createApiKey(app, cookie, { name: 'every scope', scopes: ['*:*'] });
    for (const [path, methods] of Object.entries(doc.paths)) {
      const get = methods.get;
      if (!get || path.includes('{') || get.security?.length === 0) continue;
      const status = (await app.inject({ url: path, headers: bearer(key) })).statusCode;
      if (get.security) t.equal(status, 403, `GET ${path}: documented for sessions only, refuses an API key`);
      else t.not(status, 403, `GET ${path}: documented for API keys, takes one (${status})`);
    }

    const scheme = (doc.components as unknown as { securitySchemes: Record<string, { name: string; description: string }> }).securitySchemes.session!;
    t.match(scheme, { in: 'cookie', name: 'svc_session', description: /`session_cookie_name` setting \(default `svc_session`\)/ });
  });

  t.test(`${backend}: statuses every route or a class of routes answers are documented`, async (t) => {
    const fake = await startProviderFake({ apiKey: PROVIDER_KEY });
    t.teardown(() => fake.close());
    const { app, cookie } = await adminTestApp(t, backend, { masterKey: 'openapi-master-key', providerTimeoutMs: 1000, providerMaxRetries: 1 });
    const doc = await openApiDocument(app);
    const admin = { cookie };
    const statuses = (method: string, path: string) => Object.keys(doc.paths[path]![method]!.responses).map(Number);

    for (const path of ['/v1/collections/{name}/query', '/v1/query']) t.ok(statuses('post', path).includes(502), `POST ${path}: 502 when the provider fails`);
    for (const path of ['/v1/batch/query', '/v1/admin/embedding-presets/test', '/v1/admin/embedding-presets/{id}/test']) {
      t.notOk(statuses('post', path).includes(502), `POST ${path}: no 502 (a failure is in the answer)`);
    }
    await createTestCollection(app, admin, { name: 'remote', embedding_provider: 'openai', embedding_api_key: PROVIDER_KEY, embedding_base_url: fake.baseUrl('openai'), embedding_model: 'text-embedding-3-small', dimension: 64 });
    fake.failNext('openai', { status: 500, body: { message: 'internal error' } }, 4);
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections/remote/query', headers: admin, payload: { query: 'tide' } })).statusCode, 502, 'a query answers 502');
    fake.failNext('openai', { status: 500, body: { message: 'internal error' } }, 4);
    t.equal((await app.inject({ method: 'POST', url: '/v1/query', headers: admin, payload: { query: 'tide', collections: ['remote'] } })).statusCode, 502, 'a multi-collection query too');
    fake.failNext('openai', { status: 500, body: { message: 'internal error' } }, 4);
    const batch = await app.inject({ method: 'POST', url: '/v1/batch/query', headers: admin, payload: { queries: [{ collection: 'remote', query: 'tide' }] } });
    t.equal(batch.statusCode, 200, 'a batch query is a 200');
    t.match(batch.json(), { results: [{ error: { status: 502 } }] }, 'its item carries the 502');

    for (const [method, path] of Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => [method, path] as const))) {
      t.ok(statuses(method, path).includes(400), `${method.toUpperCase()} ${path}: 400 (a NUL in the URL, malformed JSON)`);
    }
    for (const url of ['/health?x=%00', '/v1/collections/%00', '/v1/admin/settings?x=%00']) {
      t.equal((await app.inject({ url, headers: admin })).statusCode, 400, `GET ${url}: a NUL is a 400`);
    }
    for (const url of ['/v1/auth/logout-all', '/v1/admin/settings/embedding-cache/purge', '/v1/auth/logout']) {
      const answer = await app.inject({ method: 'POST', url, headers: { ...admin, 'content-type': 'application/json' }, payload: '{' });
      t.equal(answer.statusCode, 400, `POST ${url}: malformed JSON is a 400`);
    }

    t.ok(statuses('post', '/v1/admin/api-keys').includes(404) && statuses('patch', '/v1/admin/api-keys/{id}').includes(404), 'api keys: 404 documented');
    t.equal((await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: admin, payload: { name: 'pinned', collection: 'no-such-collection' } })).statusCode, 404, 'a pin to no collection is a 404');
  });
}
