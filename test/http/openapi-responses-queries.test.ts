/**
 * The success bodies the OpenAPI document describes for the query, vector, usage, auth and admin
 * user and API-key routes are the ones they answer (test/support/openapi-responses.ts), with each
 * variant that changes the shape: every search mode, a cached answer, a reranked one, multimodal
 * elements, a query with its own vector, a scoped one naming a document not ready (with context
 * windows and highlights), a batch item error, whoami of a session, a key and a pinned key.
 */
import type { InjectOptions } from 'fastify';
import t, { type Test } from 'tap';
import { harbourAtlasHtml } from '../support/document-fixtures.js';
import { documentedResponses } from '../support/openapi-responses.js';
import { ADMIN, bearer, buildTestApp, createTestCollection, multipartUpload, sessionCookieOf, testBackends, waitForIngestion } from '../support/test-app.js';

const HARBOUR = [
  'The harbour master keeps the tide tables for the inner harbour.',
  'Cranes on the quay unload the container ships at dawn.',
  'Fishing boats return to the marina before the evening tide.',
].join('\n\n');

const ATLAS = harbourAtlasHtml();

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    // Not adminTestApp: setup-status and setup are checked before the first admin exists.
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const assertDocumented = await documentedResponses(app);

    /** Sends the request, checks it got `status` (an error body would match the Error schema), then its documented body. */
    const documented = async (t: Test, status: number, options: InjectOptions & { method: string; url: string }) => {
      const answer = await app.inject(options);
      t.equal(answer.statusCode, status, `${options.method} ${options.url} ${status}`, { body: answer.body.slice(0, 300) });
      assertDocumented(t, options.method, options.url, answer);
      return answer.json() as Record<string, any>;
    };

    let admin: { cookie: string } = { cookie: '' };
    await t.test('setup-status and setup', async (t) => {
      t.same(await documented(t, 200, { method: 'GET', url: '/v1/auth/setup-status' }), { needs_setup: true });
      const setup = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: ADMIN });
      t.equal(setup.statusCode, 201, 'POST /v1/auth/setup 201', { body: setup.body.slice(0, 300) });
      assertDocumented(t, 'POST', '/v1/auth/setup', setup);
      admin = { cookie: sessionCookieOf(setup) };
      t.same(await documented(t, 200, { method: 'GET', url: '/v1/auth/setup-status' }), { needs_setup: false });
    });

    const harbour = await createTestCollection(app, admin, { name: 'harbour' });
    await createTestCollection(app, admin, { name: 'atlas', multimodal_enabled: true });
    for (const [name, file] of [['harbour', { filename: 'harbour.txt', content: HARBOUR, contentType: 'text/plain' }], ['atlas', { filename: 'atlas.html', content: ATLAS, contentType: 'text/html' }]] as const) {
      const upload = multipartUpload([file]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${name}/documents`, headers: { ...admin, ...upload.headers }, payload: upload.payload });
      t.equal(response.statusCode, 202, `${name}: uploaded`);
      await waitForIngestion(app, name, admin);
    }
    const embedding = (seed: number) => Array.from({ length: harbour.dimension }, (_, index) => Math.sin(seed + index));

    await t.test('vectors: upsert and delete', async (t) => {
      const vectors = [1, 2].map((seed) => ({ id: `raw-${seed}`, embedding: embedding(seed), text: `raw vector ${seed} about the harbour tide`, metadata: { source: 'raw' } }));
      t.same(await documented(t, 200, { method: 'POST', url: '/v1/collections/harbour/vectors/upsert', headers: admin, payload: { vectors } }), { upserted: 2 });
      t.same(await documented(t, 200, { method: 'POST', url: '/v1/collections/harbour/vectors/delete', headers: admin, payload: { ids: ['raw-2', 'unknown'] } }), { deleted: 1 });
    });

    const query = (t: Test, payload: Record<string, unknown>, name = 'harbour') =>
      documented(t, 200, { method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload });

    await t.test('POST /v1/collections/{name}/query', async (t) => {
      for (const search_mode of ['semantic', 'keyword', 'hybrid']) {
        const answer = await query(t, { query: 'harbour tide', search_mode, skip_cache: true, min_score: -1 });
        t.ok(answer.results.length > 0, `${search_mode}: there are results to check`);
        t.ok(answer.results.some((result: { document_id: string | null }) => result.document_id === null), `${search_mode}: a raw vector among them`);
      }
      const first = await query(t, { query: 'cranes unload ships', search_mode: 'hybrid' });
      const cached = await query(t, { query: 'cranes unload ships', search_mode: 'hybrid' });
      t.notOk(first.timings.cached, 'the first answer is computed');
      t.same(cached.timings.cached, true, 'the second is the cached one');
      const reranked = await query(t, { query: 'cranes unload ships', rerank: true, skip_cache: true });
      t.type(reranked.timings.rerank_ms, 'number', 'reranked');
      t.ok(reranked.results.every((result: { scores: { rerank?: number } }) => typeof result.scores.rerank === 'number'));
      const multimodal = await query(t, { query: 'cranes unload container ships', search_mode: 'keyword', multimodal: true, skip_cache: true }, 'atlas');
      t.ok(multimodal.results.some((result: { multimodal_elements: unknown[] }) => result.multimodal_elements.length > 0), 'an image beside a result');
      const ownVector = await query(t, { query: 'cranes', search_mode: 'hybrid', embedding: embedding(1), skip_cache: true });
      t.notOk('embedding_ms' in ownVector.timings, 'a query with its own vector');
      const broken = multipartUpload([{ filename: 'broken.pdf', content: '%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage without xref\n', contentType: 'application/pdf' }]);
      const failed = await app.inject({ method: 'POST', url: '/v1/collections/harbour/documents', headers: { ...admin, ...broken.headers }, payload: broken.payload });
      const documents = await waitForIngestion(app, 'harbour', admin);
      const options = { context_window: 1, highlight: true, max_per_document: 1, skip_cache: true, min_score: -1 };
      const scoped = await query(t, { query: 'harbour tide', document_ids: documents.map((document) => document.id), ...options });
      t.match(scoped.documents_not_ready, [{ id: failed.json().id, status: 'failed' }], 'a scoped answer naming a failed document');
      t.ok(scoped.results.length > 0 && scoped.results.every((result: { context: unknown; highlights: unknown }) => result.context && result.highlights), 'with windows and highlights');
    });

    await t.test('POST /v1/query', async (t) => {
      const payload = { query: 'cranes unload ships', collections: ['harbour', 'atlas'], min_score: -1 };
      const fused = await documented(t, 200, { method: 'POST', url: '/v1/query', headers: admin, payload });
      t.ok(fused.results.length > 0, 'there are results to check');
      const cached = await documented(t, 200, { method: 'POST', url: '/v1/query', headers: admin, payload });
      t.same(cached.timings.per_collection.harbour.cached, true, 'with cached per-collection timings');
      await documented(t, 200, { method: 'POST', url: '/v1/query', headers: admin, payload: { ...payload, rerank: true, multimodal: true, skip_cache: true } });
    });

    await t.test('POST /v1/batch/query', async (t) => {
      const answer = await documented(t, 200, {
        method: 'POST', url: '/v1/batch/query', headers: admin,
        payload: { queries: [
          { collection: 'harbour', query: 'tide tables' }, { collection: 'missing', query: 'tide tables' }, { collection: 'harbour', query: 'tide tables', search_mode: 'keyword' },
          { collection: 'harbour', query: 'tide tables', document_ids: (await waitForIngestion(app, 'harbour', admin)).map((document) => document.id) },
        ] },
      });
      t.ok(answer.results[0].results.length > 0, 'an item with results');
      t.equal(answer.results[1].error.status, 404, 'an item with its error');
      t.equal(answer.results[3].documents_not_ready.length, 1, 'a scoped item naming a failed document');
    });

    await t.test('usage', async (t) => {
      const report = await documented(t, 200, { method: 'GET', url: '/v1/usage?window_days=7', headers: admin });
      t.ok(report.queries_total > 0 && report.by_collection.length === 2, 'queries and collections to check');
      await documented(t, 200, { method: 'GET', url: '/v1/status/usage', headers: admin });
      const pinned = await documented(t, 201, { method: 'POST', url: '/v1/admin/api-keys', headers: admin, payload: { name: 'auditor', scopes: ['audit:read'], collection: 'harbour' } });
      const own = await documented(t, 200, { method: 'GET', url: '/v1/usage', headers: bearer(pinned.key) });
      t.same(own.by_collection.map((row: { collection: string }) => row.collection), ['harbour'], 'a pinned key\'s report');
    });

    await t.test('admin: api keys', async (t) => {
      const created = await documented(t, 201, { method: 'POST', url: '/v1/admin/api-keys', headers: admin, payload: { name: 'reader', scopes: ['query:read'], expires_at: '2099-01-01T00:00:00Z' } });
      const replayed = await documented(t, 201, { method: 'POST', url: '/v1/admin/api-keys', headers: { ...admin, 'idempotency-key': 'mint-once' }, payload: { name: 'replayed' } });
      t.type(replayed.key, 'string');
      const replay = await documented(t, 201, { method: 'POST', url: '/v1/admin/api-keys', headers: { ...admin, 'idempotency-key': 'mint-once' }, payload: { name: 'replayed' } });
      t.match(replay, { key: null, key_shown_once: true }, 'a replay does not show the key again');
      const list = await documented(t, 200, { method: 'GET', url: '/v1/admin/api-keys?limit=2', headers: admin });
      t.equal(list.data.length, 2);
      await documented(t, 200, { method: 'GET', url: `/v1/admin/api-keys/${created.id}`, headers: admin });
      await documented(t, 200, { method: 'PATCH', url: `/v1/admin/api-keys/${created.id}`, headers: admin, payload: { name: 'reader 2', expires_at: null } });
      await documented(t, 200, { method: 'POST', url: `/v1/admin/api-keys/${created.id}/rotate`, headers: admin });
    });

    await t.test('whoami and me, of a session, a key and a pinned key', async (t) => {
      const session = await documented(t, 200, { method: 'GET', url: '/v1/auth/whoami', headers: admin });
      t.equal(session.auth_method, 'session');
      await documented(t, 200, { method: 'GET', url: '/v1/auth/me', headers: admin });
      const key = await documented(t, 201, { method: 'POST', url: '/v1/admin/api-keys', headers: admin, payload: { name: 'any' } });
      t.match(await documented(t, 200, { method: 'GET', url: '/v1/auth/whoami', headers: bearer(key.key) }), { auth_method: 'api_key', collection: null });
      await documented(t, 200, { method: 'GET', url: '/v1/auth/me', headers: bearer(key.key) });
      await createTestCollection(app, admin, { name: 'doomed' });
      const pinned = await documented(t, 201, { method: 'POST', url: '/v1/admin/api-keys', headers: admin, payload: { name: 'pinned', collection: 'doomed' } });
      t.match(await documented(t, 200, { method: 'GET', url: '/v1/auth/whoami', headers: bearer(pinned.key) }), { collection: 'doomed', collection_deleted: false });
      t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/doomed', headers: admin })).statusCode, 204);
      t.match(await documented(t, 200, { method: 'GET', url: '/v1/auth/whoami', headers: bearer(pinned.key) }), { collection: 'doomed', collection_deleted: true });
      t.match(await documented(t, 200, { method: 'GET', url: `/v1/admin/api-keys/${pinned.id}`, headers: admin }), { collection_deleted: true });
    });

    await t.test('admin: users', async (t) => {
      const viewer = await documented(t, 201, { method: 'POST', url: '/v1/admin/users', headers: admin, payload: { email: 'viewer@example.com', password: 'viewer password', role: 'viewer', display_name: 'Viewer' } });
      const list = await documented(t, 200, { method: 'GET', url: '/v1/admin/users', headers: admin });
      t.equal(list.total, 2);
      await documented(t, 200, { method: 'GET', url: `/v1/admin/users/${viewer.id}`, headers: admin });
      await documented(t, 200, { method: 'PATCH', url: `/v1/admin/users/${viewer.id}`, headers: admin, payload: { display_name: null } });
    });

    await t.test('login, preferences, password and logout-all', async (t) => {
      const credentials = { email: 'viewer@example.com', password: 'viewer password' };
      const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: credentials });
      t.equal(login.statusCode, 200, 'POST /v1/auth/login 200', { body: login.body.slice(0, 300) });
      assertDocumented(t, 'POST', '/v1/auth/login', login);
      const viewer = { cookie: sessionCookieOf(login) };
      t.same(await documented(t, 200, { method: 'GET', url: '/v1/auth/preferences', headers: viewer }), { data: {} });
      const merged = await documented(t, 200, { method: 'PUT', url: '/v1/auth/preferences', headers: viewer, payload: { data: { theme: 'dark', chat: { openai_key: 'sk-test', model: 'small' } } } });
      t.same(merged.data.chat, { model: 'small', has_openai_key: true });
      await documented(t, 200, { method: 'GET', url: '/v1/auth/preferences', headers: viewer });
      const changed = await app.inject({ method: 'POST', url: '/v1/auth/password', headers: viewer, payload: { current_password: credentials.password, new_password: 'another password' } });
      t.equal(changed.statusCode, 200, 'POST /v1/auth/password 200', { body: changed.body.slice(0, 300) });
      assertDocumented(t, 'POST', '/v1/auth/password', changed);
      const fresh = { cookie: sessionCookieOf(changed) };
      t.same(await documented(t, 200, { method: 'POST', url: '/v1/auth/logout-all', headers: fresh }), { revoked_sessions: 1 });
    });
  });
}
