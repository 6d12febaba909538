/**
 * A query that brings its own vector (`embedding`) through the HTTP API, on both backends: the
 * vector is searched instead of the collection model's embedding of the query text, in semantic
 * and hybrid mode, in every query form; the cache tells vectors apart; tenants still hold; a
 * provider-backed collection is not asked to embed; bad vectors are refused by name.
 */
import t from 'tap';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';
import { assertError } from '../support/assertions.js';
import { jsonRequests } from '../support/json-requests.js';
import { startProviderFake } from '../support/provider-fakes.js';
import { adminTestApp, buildTestApp, setupAdmin, testBackends } from '../support/test-app.js';
import { providerApi } from '../providers/provider-api.js';

interface Result { id: string; score: number; scores: { semantic?: number; keyword?: number }; collection: string }
interface QueryAnswer { results: Result[]; timings: Record<string, number | boolean | undefined> }

/**
 * In a 4-dimensional collection the local model embeds the query text as `TEXT_VECTOR`. `along`
 * points its way and `against` the opposite way, so the text's own embedding ranks `along` first
 * and a query bringing the opposite vector must rank `against` first.
 */
const QUERY = 'harbour lighthouse';
const TEXT_VECTOR = Array.from(hashedTextVector(QUERY, 4));
const OPPOSITE = TEXT_VECTOR.map((value) => -value);
const VECTORS = [
  { id: 'along', embedding: TEXT_VECTOR, text: 'tide tables', metadata: { org: 'a' } },
  { id: 'against', embedding: OPPOSITE, text: 'tide tables', metadata: { org: 'a' } },
  { id: 'against-b', embedding: OPPOSITE, text: 'tide tables', metadata: { org: 'b' } },
];

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    const { request, ok } = jsonRequests(app, admin);
    const query = (collection: string, body: Record<string, unknown>) => ok<QueryAnswer>('POST', `/v1/collections/${collection}/query`, { query: QUERY, ...body });
    const ids = (answer: { results: Result[] }) => answer.results.map((result) => result.id);

    await ok('POST', '/v1/collections', { name: 'own', dimension: 4 });
    await ok('POST', '/v1/collections/own/vectors/upsert', { vectors: VECTORS.slice(0, 2) });
    await ok('POST', '/v1/collections', { name: 'tenants', dimension: 4, tenant_field: 'org' });
    await ok('POST', '/v1/collections/tenants/vectors/upsert', { vectors: VECTORS });
    await ok('POST', '/v1/collections', { name: 'wide', dimension: 8 });

    await t.test('semantic: the given vector is searched, not the embedding of the query text', async (t) => {
      const byText = await query('own', { search_mode: 'semantic', min_score: -1, skip_cache: true });
      t.same(ids(byText), ['along', 'against'], 'the text\'s own embedding points at "along"');
      t.type(byText.timings.embedding_ms, 'number');

      const byVector = await query('own', { search_mode: 'semantic', min_score: -1, skip_cache: true, embedding: OPPOSITE });
      t.same(ids(byVector), ['against', 'along']);
      t.ok(Math.abs(byVector.results[0]!.score - 1) < 1e-5, `cosine 1 with its own direction (${byVector.results[0]!.score})`);
      t.notOk('embedding_ms' in byVector.timings, 'nothing was embedded');
      t.type(byVector.timings.semantic_ms, 'number');
    });

    await t.test('hybrid: the semantic list comes from the given vector, the keyword list from the text', async (t) => {
      const answer = await query('own', { query: 'tide', search_mode: 'hybrid', min_score: -1, skip_cache: true, embedding: OPPOSITE });
      t.equal(answer.results[0]!.id, 'against', 'both chunks match "tide" alike; the vector decides');
      t.ok(Math.abs(answer.results[0]!.scores.semantic! - 1) < 1e-5);
      t.type(answer.results[0]!.scores.keyword, 'number', 'the keyword list still ran');
    });

    await t.test('the cache tells vectors apart by direction', async (t) => {
      // top_k 5: the earlier tests' answers (stored even with skip_cache) are other entries.
      const first = await query('own', { search_mode: 'semantic', min_score: -1, top_k: 5, embedding: OPPOSITE });
      t.notOk(first.timings.cached);
      const scaled = await query('own', { search_mode: 'semantic', min_score: -1, top_k: 5, embedding: OPPOSITE.map((value) => value * 7) });
      t.equal(scaled.timings.cached, true, 'the same direction at another length is the same query');
      t.same(ids(scaled), ids(first));
      const other = await query('own', { search_mode: 'semantic', min_score: -1, top_k: 5, embedding: TEXT_VECTOR });
      t.notOk(other.timings.cached, 'another vector is another query');
      t.same(ids(other), ['along', 'against']);
    });

    await t.test('tenants stay apart', async (t) => {
      const answer = await query('tenants', { search_mode: 'semantic', min_score: -1, skip_cache: true, embedding: OPPOSITE, filters: { org: 'b' } });
      t.same(ids(answer), ['against-b']);
      assertError(t, await request('POST', '/v1/collections/tenants/query', { query: QUERY, embedding: OPPOSITE }), 400, /^filters\.org is required/, 'no tenant');
    });

    await t.test('batch items and /v1/query take it too', async (t) => {
      const batch = await ok<{ results: Array<{ results?: Result[]; error?: { status: number; detail: string } }> }>('POST', '/v1/batch/query', {
        queries: [
          { collection: 'own', query: QUERY, search_mode: 'semantic', top_k: 1, embedding: OPPOSITE },
          { collection: 'own', query: QUERY, search_mode: 'semantic', top_k: 1 },
          { collection: 'wide', query: QUERY, search_mode: 'semantic', embedding: OPPOSITE },
        ],
      });
      t.same(ids({ results: batch.results[0]!.results! }), ['against']);
      t.same(ids({ results: batch.results[1]!.results! }), ['along']);
      t.same(batch.results[2]!.error, { status: 400, detail: 'embedding has 4 dimensions; collection wide expects 8' });

      const fused = await ok<{ results: Result[] }>('POST', '/v1/query', { query: QUERY, collections: ['own'], search_mode: 'semantic', min_score: -1, skip_cache: true, embedding: OPPOSITE });
      t.same(ids(fused), ['against', 'along']);
      assertError(t, await request('POST', '/v1/query', { query: QUERY, collections: ['own', 'wide'], search_mode: 'semantic', embedding: OPPOSITE }), 400,
        'embedding has 4 dimensions; collection wide expects 8', 'a collection of another dimension');
    });

    await t.test('bad vectors: 400 naming what is wrong', async (t) => {
      const refused = (body: Record<string, unknown>) => request('POST', '/v1/collections/own/query', { query: QUERY, ...body });
      assertError(t, await refused({ embedding: [1, 0, 0] }), 400, 'embedding has 3 dimensions; collection own expects 4', 'too short');
      assertError(t, await refused({ embedding: [0, 0, 0, 0] }), 400, 'embedding is all zeros: cosine similarity is undefined for it', 'zeros');
      assertError(t, await refused({ embedding: OPPOSITE, search_mode: 'keyword' }), 400, /^embedding is searched in semantic and hybrid mode/, 'keyword mode');
      assertError(t, await refused({ embedding: [] }), 400, /embedding/, 'empty');
      assertError(t, await refused({ embedding: [1, 'x', 0, 0] }), 400, /embedding/, 'not a number');
      const tooLarge = await app.inject({
        method: 'POST', url: '/v1/collections/own/query', headers: { ...admin, 'content-type': 'application/json' },
        payload: `{"query": "${QUERY}", "embedding": [1, 1e400, 0, 0]}`,
      });
      assertError(t, tooLarge, 400, 'embedding[1] is too large for a double', 'beyond a double');
      const stats = await ok<{ chunks: number }>('GET', '/v1/collections/own/stats');
      t.equal(stats.chunks, 2, 'nothing was written');
    });
  });
}

t.test('a provider-backed collection is not asked to embed a query that brings its vector', async (t) => {
  const key = 'sk-test-OWN-VECTOR-0123456789abcdef';
  const fake = await startProviderFake({ apiKey: key });
  t.teardown(() => fake.close());
  const ctx = await buildTestApp('pglite', { masterKey: 'test-master-key' });
  t.teardown(() => ctx.close());
  const api = providerApi(ctx.app, { cookie: await setupAdmin(ctx.app) });
  await api.createCollection({ name: 'hosted', embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 4, embedding_api_key: key, embedding_base_url: fake.baseUrl('openai') });
  await api.ok('POST', '/v1/collections/hosted/vectors/upsert', { vectors: VECTORS.slice(0, 2) });

  fake.failNext('openai', { status: 503, body: { error: { message: 'overloaded' } } }, 100);
  for (const mode of ['semantic', 'hybrid']) {
    const answer = await api.query('hosted', { query: QUERY, search_mode: mode, min_score: -1, embedding: OPPOSITE });
    t.equal(answer.results[0].id, 'against', `${mode}: answered while the provider is down`);
  }
  t.equal(fake.requestsTo('openai').length, 0, 'no embedding request was made');
  const byText = await api.send('POST', '/v1/collections/hosted/query', { query: QUERY, search_mode: 'semantic', skip_cache: true });
  t.equal(byText.statusCode, 502, 'without its own vector the query needs the provider, which is down');
});
