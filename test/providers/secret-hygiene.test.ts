/**
 * No API key of a provider ever leaves the service. Every response body and every log line (at
 * trace level) of a session that uses keys every way the API allows is captured: presets and
 * their connection tests, collections with embedding and reranking keys, ingestion, queries,
 * retries, and failures whose provider messages repeat the key they were given. None may contain
 * a key, raw or base64-encoded.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import { startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, createApiKey, setupAdmin, testBackends } from '../support/test-app.js';
import { ONE_PARAGRAPH_CHUNKS, paragraphs, providerApi, type Answer } from './provider-api.js';

const GOOD_KEY = 'sk-hygiene-GOOD-key-abcdef123456';
const KEYS = [
  GOOD_KEY,
  'sk-hygiene-WRONG-embedding-key-0001',
  'rr-hygiene-WRONG-rerank-key-0002',
  'sk-hygiene-WRONG-preset-key-0003',
  'sk-hygiene-WRONG-test-key-0004',
];
const [, WRONG_EMBEDDING, WRONG_RERANK, WRONG_PRESET, WRONG_TEST] = KEYS as [string, string, string, string, string];

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const logLines: string[] = [];
    const logStream = new Writable({
      write(chunk, _encoding, callback) {
        logLines.push(String(chunk));
        callback();
      },
    });
    const bodies: string[] = [];
    const fake = await startProviderFake({ apiKey: GOOD_KEY });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend, { masterKey: 'hygiene-master-key', providerTimeoutMs: 5000, providerMaxRetries: 1 }, { logStream });
    t.teardown(() => ctx.close());
    const cookie = await setupAdmin(ctx.app);
    const api = providerApi(ctx.app, { cookie }, (answer: Answer) => bodies.push(answer.body));
    const presets = '/v1/admin/embedding-presets';

    // Presets: create, read, list, update, test (saved, unsaved, refused).
    const preset = await api.ok('POST', presets, { name: 'hosted', provider: 'openai', api_key: GOOD_KEY, base_url: fake.baseUrl('openai'), dimension: 32 }, 201);
    await api.ok('GET', `${presets}/${preset.id}`);
    await api.ok('GET', presets);
    await api.ok('POST', `${presets}/${preset.id}/test`);
    await api.ok('POST', `${presets}/test`, { provider: 'openai', api_key: WRONG_TEST, base_url: fake.baseUrl('openai') });
    const wrongPreset = await api.ok('POST', presets, { name: 'wrong', provider: 'cohere', api_key: WRONG_PRESET, base_url: fake.baseUrl('cohere') }, 201);
    await api.ok('POST', `${presets}/${wrongPreset.id}/test`);
    await api.ok('PATCH', `${presets}/${wrongPreset.id}`, { api_key: GOOD_KEY });

    // Collections with keys: from a preset, with their own keys, with refused keys.
    await api.createCollection({ name: 'good', embedding_preset_id: preset.id, reranking_enabled: true, reranking_model: 'cohere/rerank-v3.5', reranking_base_url: fake.baseUrl('cohere'), reranking_api_key: GOOD_KEY, ...ONE_PARAGRAPH_CHUNKS });
    await api.createCollection({ name: 'refused', embedding_provider: 'openai', embedding_api_key: WRONG_EMBEDDING, embedding_base_url: fake.baseUrl('openai'), dimension: 32 });
    await api.createCollection({ name: 'bad-rerank', reranking_enabled: true, reranking_model: 'voyage/rerank-2.5', reranking_base_url: fake.baseUrl('voyage'), reranking_api_key: WRONG_RERANK });
    await api.ok('PATCH', '/v1/collections/good', { embedding_api_key: GOOD_KEY });
    await api.ok('GET', '/v1/collections');

    // Ingestion: retries whose provider messages quote the key, then success; a refused key.
    fake.failNext('openai', { status: 429, headers: { 'retry-after': '0' }, body: { error: { message: `Rate limit reached for key ${GOOD_KEY}` } } });
    await api.upload('good', 'a.txt', paragraphs(6).join('\n\n'));
    await api.upload('refused', 'b.txt', 'text for a refused key');
    await api.upload('bad-rerank', 'c.txt', 'text for a refused reranker key');
    for (const name of ['good', 'refused', 'bad-rerank']) await api.settle(name);
    for (const name of ['good', 'refused', 'bad-rerank']) await api.ok('GET', `/v1/collections/${name}/documents`);

    // Queries: reranked, refused embedding key, refused reranking key, a provider failure quoting the key.
    await api.query('good', { query: 'lighthouse valley' });
    await api.send('POST', '/v1/collections/refused/query', { query: 'text', search_mode: 'semantic' });
    await api.send('POST', '/v1/collections/bad-rerank/query', { query: 'text' });
    fake.failNext('openai', { status: 500, body: { error: { message: `internal error for ${GOOD_KEY}` } } }, 2);
    await api.send('POST', '/v1/collections/good/query', { query: 'another', search_mode: 'semantic', skip_cache: true });
    await api.ok('POST', '/v1/batch/query', { queries: [{ collection: 'refused', query: 'x', search_mode: 'semantic' }, { collection: 'bad-rerank', query: 'y' }] });

    // Everything an admin can read afterwards.
    for (const url of ['/v1/stats', '/v1/usage', '/v1/admin/audit?limit=500', '/v1/admin/settings', '/v1/collections/good/stats', '/v1/collections/refused', '/v1/auth/me']) await api.send('GET', url);
    const apiKey = await createApiKey(ctx.app, cookie, { name: 'reader' });
    bodies.push(JSON.stringify(apiKey));
    await ctx.app.close();

    t.ok(bodies.length > 30, `${bodies.length} response bodies captured`);
    t.ok(logLines.length > 40, `${logLines.length} log lines captured`);
    t.ok(logLines.some((line) => line.includes('provider call failed; retrying') && line.includes('[redacted]')), 'the retry was logged, with the key removed');
    t.ok(bodies.some((body) => body.includes('openai answered 401: Incorrect API key provided: [redacted]')), 'the refusal reached the client, without the key');
    const needles = KEYS.flatMap((key) => [key, Buffer.from(key).toString('base64')]);
    for (const [what, texts] of [['response bodies', bodies], ['log lines', logLines]] as const) {
      const leaks = texts.filter((text) => needles.some((needle) => text.includes(needle)));
      t.same(leaks, [], `no ${what} hold a key`);
    }
    t.ok(fake.requests.some((request) => request.authorization === `Bearer ${WRONG_EMBEDDING}`), 'the keys did reach the provider, where they belong');
  });
}
