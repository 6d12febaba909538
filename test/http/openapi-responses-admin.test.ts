/**
 * The success bodies the OpenAPI document describes for the admin settings, embedding-preset,
 * audit, vector-storage and embedding-cache routes are the ones they answer
 * (test/support/openapi-responses.ts), with each variant that changes the shape: a refused
 * settings check, a preset with and without a key, a connection test that succeeds and one the
 * provider refuses (ok: false), the in-process index of the embedded store.
 */
import type { InjectOptions } from 'fastify';
import t, { type Test } from 'tap';
import { documentedResponses } from '../support/openapi-responses.js';
import { startProviderFake } from '../support/provider-fakes.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const KEY = 'sk-openapi-preset-key-0123456789';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY });
    t.teardown(() => fake.close());
    const { app, admin } = await adminTestApp(t, backend, { masterKey: 'openapi-master-key', providerTimeoutMs: 1000, providerMaxRetries: 1 });
    const assertDocumented = await documentedResponses(app);

    /** Sends the request, checks it got `status` (an error body would match the Error schema), then its documented body. */
    const documented = async (t: Test, status: number, options: InjectOptions & { method: string; url: string }) => {
      const answer = await app.inject({ headers: admin, ...options });
      t.equal(answer.statusCode, status, `${options.method} ${options.url} ${status}`, { body: answer.body.slice(0, 300) });
      assertDocumented(t, options.method, options.url, answer);
      return answer.json() as Record<string, any>;
    };

    await t.test('settings: list, update, check, reset', async (t) => {
      const listed = await documented(t, 200, { method: 'GET', url: '/v1/admin/settings' });
      t.ok(listed.data.some((setting: { source: string }) => setting.source === 'default'));
      const updated = await documented(t, 200, { method: 'PATCH', url: '/v1/admin/settings', payload: { values: { query_cache_ttl_s: 30 } } });
      t.match(updated.data.find((setting: { key: string }) => setting.key === 'query_cache_ttl_s'), { value: 30, source: 'database' });
      t.same(await documented(t, 200, { method: 'POST', url: '/v1/admin/settings/test', payload: { values: { session_cookie_secure: true } } }), { ok: true, errors: [] });
      const refused = await documented(t, 200, { method: 'POST', url: '/v1/admin/settings/test', payload: { values: { query_cache_ttl_s: -1, nope: 1 } } });
      t.match(refused, { ok: false, errors: [/query_cache_ttl_s/, /Unknown setting: nope/] });
      const reset = await documented(t, 200, { method: 'POST', url: '/v1/admin/settings/reset', payload: { keys: ['query_cache_ttl_s'] } });
      t.match(reset.data.find((setting: { key: string }) => setting.key === 'query_cache_ttl_s'), { value: 60, source: 'default' });
    });

    const presets = '/v1/admin/embedding-presets';
    await t.test('embedding presets: create, list, read, update, connection tests', async (t) => {
      const created = await documented(t, 201, {
        method: 'POST', url: presets,
        payload: { name: 'openai-small', provider: 'openai', model: 'text-embedding-3-small', api_key: KEY, base_url: fake.baseUrl('openai'), dimension: 64 },
      });
      t.match(created, { has_api_key: true, base_url: fake.baseUrl('openai') });
      t.match(await documented(t, 201, { method: 'POST', url: presets, payload: { name: 'local', provider: 'local' } }), { has_api_key: false, base_url: null });
      t.match(await documented(t, 200, { method: 'GET', url: presets }), { total: 2 });
      t.same(await documented(t, 200, { method: 'GET', url: `${presets}/${created.id}` }), created);
      t.match(await documented(t, 200, { method: 'PATCH', url: `${presets}/${created.id}`, payload: { name: 'openai-renamed' } }), { name: 'openai-renamed' });

      const unsaved = { provider: 'openai', model: 'text-embedding-3-small', api_key: KEY, base_url: fake.baseUrl('openai') };
      t.match(await documented(t, 200, { method: 'POST', url: `${presets}/test`, payload: unsaved }), { ok: true, dimension: 1536 });
      t.match(await documented(t, 200, { method: 'POST', url: `${presets}/test`, payload: { ...unsaved, api_key: 'sk-wrong-key-000000000' } }), { ok: false, error: /401/ }, 'a refused key is an answer');
      t.match(await documented(t, 200, { method: 'POST', url: `${presets}/${created.id}/test` }), { ok: true, dimension: 64 });
      fake.failNext('openai', { status: 500, body: { message: 'internal error' } }, 2);
      t.match(await documented(t, 200, { method: 'POST', url: `${presets}/${created.id}/test` }), { ok: false, error: /500/ }, 'a provider failure is an answer');
    });

    await t.test('audit list', async (t) => {
      const audit = await documented(t, 200, { method: 'GET', url: '/v1/admin/audit?limit=100' });
      t.ok(audit.data.some((event: { action: string; resource_id: string | null }) => event.action === 'settings.update' && event.resource_id === null), 'an event without a resource');
      t.ok(audit.data.some((event: { action: string }) => event.action === 'embedding_preset.create'), 'an event with one');
    });

    await t.test('vector storage overview and embedding cache purge', async (t) => {
      await createTestCollection(app, admin, { name: 'harbour' });
      const upload = multipartUpload([{ filename: 'harbour.txt', content: 'The harbour master keeps the tide tables.', contentType: 'text/plain' }]);
      const uploaded = await app.inject({ method: 'POST', url: '/v1/collections/harbour/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
      t.equal(uploaded.statusCode, 202);
      await waitForIngestion(app, 'harbour', admin);
      // A query loads the embedded store's index, so the overview shows a loaded one with its source.
      t.equal((await app.inject({ method: 'POST', url: '/v1/collections/harbour/query', headers: admin, payload: { query: 'tide tables' } })).statusCode, 200);
      const overview = await documented(t, 200, { method: 'GET', url: '/v1/admin/vector-storage' });
      t.match(overview, { store: backend === 'postgresql' ? 'pgvector' : 'embedded', total: 1, data: [{ collection: 'harbour', vectors: 1 }] });
      if (backend !== 'postgresql') t.match(overview.data[0].memory_index, { loaded: true }, 'the embedded store describes its index');
      const purged = await documented(t, 200, { method: 'POST', url: '/v1/admin/settings/embedding-cache/purge' });
      t.type(purged.purged, 'number');
    });
  });
}
