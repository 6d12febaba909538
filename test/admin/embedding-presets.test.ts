/**
 * Embedding presets (spec 2.11, api-contract 2): CRUD with write-only keys sealed by MASTER_KEY,
 * refused input that leaves nothing behind, connection tests of unsaved and saved settings with a
 * real round trip (to the provider fake), and collections created from a preset.
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { startProviderFake } from '../support/provider-fakes.js';
import { bearer, buildTestApp, createApiKey, setupAdmin, testBackends } from '../support/test-app.js';
import { paragraphs, providerApi } from '../providers/provider-api.js';

const KEY = 'sk-preset-SECRET-key-9876543210';
const WRONG_KEY = 'sk-preset-WRONG-key-1111111111';
const OPENAI_KEY = 'sk-OPENAI-SECRET-2222222222';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend, { masterKey: 'preset-master-key', providerTimeoutMs: 1000, providerMaxRetries: 1 });
    t.teardown(() => ctx.close());
    const cookie = await setupAdmin(ctx.app);
    const api = providerApi(ctx.app, { cookie });
    const presets = '/v1/admin/embedding-presets';
    const openAiPreset = { name: 'openai-small', provider: 'openai', model: 'text-embedding-3-small', api_key: KEY, base_url: fake.baseUrl('openai'), dimension: 64 };
    const storedSealedKey = async (id: string) =>
      (await ctx.services.sql<{ api_key_sealed: string | null }>('select api_key_sealed from embedding_presets where id = ?', [id]))[0]!.api_key_sealed;

    let presetId = '';
    await t.test('create, read, list: the key is write-only and sealed at rest', async (t) => {
      const created = await api.ok('POST', presets, openAiPreset, 201);
      presetId = created.id;
      t.match(created, { name: 'openai-small', provider: 'openai', model: 'text-embedding-3-small', base_url: fake.baseUrl('openai'), dimension: 64, has_api_key: true });
      t.notOk('api_key' in created);
      t.same(await api.ok('GET', `${presets}/${presetId}`), created);
      const list = await api.ok('GET', presets);
      t.match(list, { total: 1, limit: 50, offset: 0, data: [created] });
      const sealed = await storedSealedKey(presetId);
      t.type(sealed, 'string');
      t.notMatch(sealed!, KEY, 'not stored in plaintext');
      t.notOk(sealed!.startsWith('plain:'), 'sealed with MASTER_KEY');
      t.equal(ctx.services.secrets.open(sealed!), KEY);
      const defaults = await api.ok('POST', presets, { name: 'voyage-defaults', provider: 'voyage', api_key: KEY, base_url: fake.baseUrl('voyage') }, 201);
      t.match(defaults, { model: 'voyage-3.5', dimension: 1024 }, 'model and dimension from the model table');
      const local = await api.ok('POST', presets, { name: 'local', provider: 'local' }, 201);
      t.match(local, { model: 'local-hash-384', dimension: 384, has_api_key: false });
    });

    await t.test('refused input: 400 or 409, nothing written', async (t) => {
      const before = (await api.ok('GET', presets)).total;
      const refused: Array<[unknown, number, RegExp]> = [
        [{ provider: 'openai', api_key: KEY }, 400, /name/],
        [{ name: 'x', provider: 'acme' }, 400, /provider/],
        [{ name: 'x', provider: 'openai' }, 400, /api_key is required for provider openai/],
        [{ name: 'x', provider: 'openai', api_key: KEY, model: 'text-embedding-ada-002', dimension: 256 }, 400, /cannot produce 256-dimensional vectors/],
        [{ name: 'x', provider: 'openai_compatible', model: 'nomic-embed-text', dimension: 768 }, 400, /base_url is required/],
        [{ name: 'x', provider: 'openai_compatible', base_url: fake.baseUrl('compatible'), model: 'm' }, 400, /dimension is required/],
        [{ name: 'x', provider: 'local', base_url: 'not a url' }, 400, /base_url/],
        [{ name: 'x', provider: 'openai_compatible', base_url: 'file:///etc/passwd', model: 'm', dimension: 8 }, 400, /base_url must be an http:\/\/ or https:\/\/ URL/],
        [{ name: 'x', provider: 'local', extra: 1 }, 400, /extra/],
        [{ ...openAiPreset }, 409, /openai-small already exists/],
      ];
      for (const [body, status, detail] of refused) assertError(t, await api.send('POST', presets, body), status, detail, JSON.stringify(body));
      t.equal((await api.ok('GET', presets)).total, before);
      assertError(t, await api.send('PATCH', `${presets}/${presetId}`, { dimension: 5000 }), 400, /cannot produce 5000/);
      assertError(t, await api.send('PATCH', `${presets}/${presetId}`, { name: 'voyage-defaults' }), 409, /already exists/);
      t.match(await api.ok('GET', `${presets}/${presetId}`), { name: 'openai-small', dimension: 64 }, 'unchanged');
      assertError(t, await api.send('GET', `${presets}/00000000-0000-4000-8000-000000000000`), 404);
      assertError(t, await api.send('GET', `${presets}/not-a-uuid`), 400);
    });

    await t.test('connection test of unsaved settings: a real round trip', async (t) => {
      fake.reset();
      const native = await api.ok('POST', `${presets}/test`, { provider: 'openai', model: 'text-embedding-3-small', api_key: KEY, base_url: fake.baseUrl('openai') });
      t.match(native, { ok: true, provider: 'openai', model: 'text-embedding-3-small', dimension: 1536 });
      t.ok(native.tokens > 0 && native.latency_ms >= 0);
      t.equal(fake.requestsTo('openai').length, 1, 'the provider was called');
      const shortened = await api.ok('POST', `${presets}/test`, { provider: 'openai', api_key: KEY, base_url: fake.baseUrl('openai'), dimension: 64 });
      t.match(shortened, { ok: true, dimension: 64 });
      const probed = await api.ok('POST', `${presets}/test`, { provider: 'openai_compatible', model: 'nomic-embed-text', base_url: fake.baseUrl('compatible') });
      t.match(probed, { ok: true, dimension: 768 }, 'a self-hosted model reports its dimension');
      const refusedKey = await api.send('POST', `${presets}/test`, { provider: 'openai', api_key: WRONG_KEY, base_url: fake.baseUrl('openai') });
      t.equal(refusedKey.statusCode, 200);
      t.match(refusedKey.json(), { ok: false, error: /^openai answered 401: Incorrect API key provided: \[redacted\]/ });
      t.notMatch(refusedKey.body, WRONG_KEY);
      fake.failNext('cohere', { status: 500, body: { message: 'internal error' } }, 2);
      t.match(await api.ok('POST', `${presets}/test`, { provider: 'cohere', api_key: KEY, base_url: fake.baseUrl('cohere') }), { ok: false, error: 'cohere answered 500: internal error' });
      assertError(t, await api.send('POST', `${presets}/test`, { provider: 'openai_compatible', model: 'm' }), 400, /^base_url is required for provider openai_compatible/, 'the field as this request names it, not the collection field embedding_base_url');
    });

    await t.test('connection test of a saved preset uses its stored key and dimension', async (t) => {
      fake.reset();
      t.match(await api.ok('POST', `${presets}/${presetId}/test`), { ok: true, dimension: 64 });
      t.equal(fake.requestsTo('openai')[0]!.authorization, `Bearer ${KEY}`);
      fake.failNext('openai', { dimension: 32 });
      t.match(await api.ok('POST', `${presets}/${presetId}/test`), { ok: false, error: /returned 32-dimensional vectors, but dimension 64 is configured/ });
      assertError(t, await api.send('POST', `${presets}/00000000-0000-4000-8000-000000000000/test`), 404);
    });

    await t.test('a collection created from a preset takes its settings and key', async (t) => {
      fake.reset();
      const collection = await api.createCollection({ name: 'from-preset', embedding_preset_id: presetId });
      t.match(collection, {
        embedding_preset_id: presetId, embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 64,
        embedding_base_url: fake.baseUrl('openai'), has_embedding_api_key: true,
      });
      await api.upload('from-preset', 'a.txt', paragraphs(3).join('\n\n'));
      const [document] = await api.settle('from-preset');
      t.equal(document!.status, 'ready', document!.error ?? '');
      t.equal(fake.requestsTo('openai')[0]!.authorization, `Bearer ${KEY}`, 'the preset key is used');
      const same = await api.createCollection({ name: 'from-preset-2', embedding_preset_id: presetId, embedding_model: 'text-embedding-3-small', dimension: 64 });
      t.equal(same.dimension, 64, 'fields equal to the preset are accepted');
      for (const conflict of [{ dimension: 128 }, { embedding_provider: 'cohere' }, { embedding_model: 'text-embedding-3-large' }, { embedding_base_url: 'http://elsewhere.example/v1' }]) {
        assertError(t, await api.send('POST', '/v1/collections', { name: 'conflict', embedding_preset_id: presetId, ...conflict }), 400, new RegExp(`${Object.keys(conflict)[0]} differs from embedding preset openai-small`));
      }
      assertError(t, await api.send('GET', '/v1/collections/conflict'), 404, undefined, 'nothing created');
    });

    await t.test('update: fields change, a null api_key clears the key, audit records each change', async (t) => {
      const renamed = await api.ok('PATCH', `${presets}/${presetId}`, { name: 'openai-renamed', dimension: 128 });
      t.match(renamed, { name: 'openai-renamed', dimension: 128, has_api_key: true });
      const switched = await api.ok('PATCH', `${presets}/${presetId}`, { provider: 'cohere', api_key: KEY, base_url: fake.baseUrl('cohere') });
      t.match(switched, { provider: 'cohere', model: 'embed-english-v3.0', dimension: 1024 }, 'a new provider starts from its defaults');
      const cleared = await api.ok('PATCH', `${presets}/${presetId}`, { api_key: null });
      t.equal(cleared.has_api_key, false);
      t.equal(await storedSealedKey(presetId), null);
      const renamedKeyless = await api.send('PATCH', `${presets}/${presetId}`, { name: 'openai-renamed-2' });
      t.equal(renamedKeyless.statusCode, 200, `a preset without a key can still be updated: ${renamedKeyless.body}`);
      t.equal((await api.ok('PATCH', `${presets}/${presetId}`, { name: 'openai-renamed' })).name, 'openai-renamed');
      assertError(t, await api.send('PATCH', `${presets}/${presetId}`, { provider: 'voyage' }), 400, /api_key is required for provider voyage/, 'a new hosted provider needs its key');
      assertError(t, await api.send('POST', '/v1/collections', { name: 'keyless', embedding_preset_id: presetId }), 400, /embedding preset openai-renamed holds no key/);
      const withOwnKey = await api.createCollection({ name: 'own-key', embedding_preset_id: presetId, embedding_api_key: KEY });
      t.equal(withOwnKey.has_embedding_api_key, true, "a collection's own key stands in for the preset's");
      const audit = await api.ok('GET', '/v1/admin/audit?resourceType=embedding_preset&limit=100');
      const actions = audit.data.map((event: { action: string }) => event.action);
      t.ok(actions.includes('embedding_preset.create') && actions.includes('embedding_preset.update'));
      t.notMatch(JSON.stringify(audit), KEY, 'the audit trail holds no key');
    });

    await t.test('delete: 204, then 404; collections made from it keep working and no longer name it', async (t) => {
      t.match(await api.ok('GET', '/v1/collections/from-preset'), { embedding_preset_id: presetId }, 'looked up (and cached) before');
      await api.ok('DELETE', `${presets}/${presetId}`, undefined, 204);
      for (const name of ['from-preset', 'from-preset-2', 'own-key']) {
        t.match(await api.ok('GET', `/v1/collections/${name}`), { embedding_preset_id: null }, `${name}: the reference is cleared`);
      }
      t.match(await api.ok('GET', '/v1/collections/from-preset'), { embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 64 }, 'its settings kept');
      assertError(t, await api.send('GET', `${presets}/${presetId}`), 404);
      assertError(t, await api.send('DELETE', `${presets}/${presetId}`), 404);
      const answer = await api.query('from-preset', { query: paragraphs(3)[1]!, search_mode: 'semantic', top_k: 1 });
      t.match(answer.results[0].text, paragraphs(3)[1]!);
    });

    await t.test('a provider change takes only the key and base URL sent with it: the old ones never reach the new provider', async (t) => {
      const oak = await api.ok('POST', presets, { name: 'oak', provider: 'openai', model: 'text-embedding-3-small', api_key: OPENAI_KEY, base_url: fake.baseUrl('openai'), dimension: 64 }, 201);
      const url = `${presets}/${oak.id}`;
      await api.createCollection({ name: 'oak-collection', embedding_preset_id: oak.id });

      for (const body of [{ provider: 'voyage' }, { provider: 'voyage', api_key: null }, { provider: 'voyage', base_url: fake.baseUrl('voyage') }]) {
        assertError(t, await api.send('PATCH', url, body), 400, /^api_key is required for provider voyage/, JSON.stringify(body));
      }
      t.same(await api.ok('GET', url), oak, 'unchanged: still openai with its key and base URL');
      t.equal(ctx.services.secrets.open((await storedSealedKey(oak.id))!), OPENAI_KEY);

      const voyage = await api.ok('PATCH', url, { provider: 'voyage', api_key: KEY });
      t.match(voyage, { provider: 'voyage', model: 'voyage-3.5', dimension: 1024, base_url: null, has_api_key: true }, "the new provider's default model; the old base URL is not kept");
      t.equal(ctx.services.secrets.open((await storedSealedKey(oak.id))!), KEY, 'the new key is stored');

      const cohere = await api.ok('PATCH', url, { provider: 'cohere', api_key: KEY, base_url: fake.baseUrl('cohere') });
      t.match(cohere, { provider: 'cohere', model: 'embed-english-v3.0', base_url: fake.baseUrl('cohere'), has_api_key: true }, 'a base URL sent with the change is taken');
      // The same provider at another host: the stored key went along, and keys cannot be read back.
      assertError(t, await api.send('PATCH', url, { base_url: 'http://127.0.0.1:9/v2' }), 400, /^api_key is required with a new base_url: the stored key is never sent to another host/, 'a new base URL alone');
      t.same(await api.ok('GET', url), cohere, 'unchanged');
      t.match(await api.ok('PATCH', url, { base_url: fake.baseUrl('cohere'), model: 'embed-english-v3.0' }), { has_api_key: true }, 'the same base URL sent again keeps the key');
      fake.reset();
      t.match(await api.ok('POST', `${url}/test`), { ok: true, provider: 'cohere', dimension: 1024 });
      t.same(fake.requestsTo('cohere').map((request) => request.authorization), [`Bearer ${KEY}`], 'the new key, at the new base URL');
      t.equal(fake.requestsTo('openai').length + fake.requestsTo('voyage').length, 0, 'nothing went to the old base URL');

      const local = await api.ok('PATCH', url, { provider: 'local' });
      t.match(local, { provider: 'local', model: 'local-hash-384', dimension: 384, base_url: null, has_api_key: false }, 'a provider that needs no key drops the stored one');
      t.equal(await storedSealedKey(oak.id), null);

      t.match(await api.ok('GET', '/v1/collections/oak-collection'), {
        embedding_preset_id: oak.id, embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 64,
        embedding_base_url: fake.baseUrl('openai'), has_embedding_api_key: true,
      }, 'a collection made from the preset keeps the copy it was created with');
      const [collectionKey] = await ctx.services.sql<{ embedding_api_key_sealed: string }>('select embedding_api_key_sealed from collections where name = ?', ['oak-collection']);
      t.equal(ctx.services.secrets.open(collectionKey!.embedding_api_key_sealed), OPENAI_KEY, "and its own copy of the openai key, for openai only");
    });

    await t.test('API keys are refused on every preset route', async (t) => {
      const key = await createApiKey(ctx.app, cookie, { name: 'full' });
      for (const [method, url] of [['GET', presets], ['POST', `${presets}/test`]] as const) {
        const answer = await ctx.app.inject({ method, url, headers: bearer(key.key), payload: {} });
        assertError(t, answer, 403, /session/);
      }
    });
  });
}
