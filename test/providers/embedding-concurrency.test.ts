/**
 * Ingestion keeps several embedding requests in flight, never more than PROVIDER_CONCURRENCY, and
 * a query's embedding goes ahead of the ingestion requests waiting for a slot. The fake answers
 * each request after 50 ms, like a provider's round trip. Throughput is measured in
 * bench/providers, not asserted here.
 */
import t from 'tap';
import { startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, setupAdmin, testBackends } from '../support/test-app.js';
import { ONE_PARAGRAPH_CHUNKS, paragraphs, providerApi } from './provider-api.js';

const KEY = 'sk-concurrency-key-777';
const LIMIT = 4;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY, latencyMs: 50 });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend, { providerConcurrency: LIMIT });
    t.teardown(() => ctx.close());
    const cookie = await setupAdmin(ctx.app);
    const api = providerApi(ctx.app, { cookie });
    await api.createCollection({
      name: 'busy', embedding_provider: 'cohere', embedding_model: 'embed-english-light-v3.0', embedding_api_key: KEY, embedding_base_url: fake.baseUrl('cohere'), ...ONE_PARAGRAPH_CHUNKS,
    });

    await t.test('a claimed batch is embedded by several requests at once, within the bound', async (t) => {
      fake.reset();
      // Each document needs LIMIT requests of Cohere's 96 texts by itself, so the peak does not
      // depend on how many of them the worker happens to claim together.
      for (let index = 0; index < 4; index++) await api.upload('busy', `doc${index}.txt`, paragraphs(96 * LIMIT, `doc${index}`).join('\n\n'));
      const documents = await api.settle('busy');
      t.ok(documents.every((document) => document.status === 'ready'));
      t.equal(fake.maxInFlight, LIMIT, `${LIMIT} requests in flight at the peak, never more`);
      t.ok(fake.requestsTo('cohere').length >= LIMIT);
    });

    await t.test("a query's embedding does not wait behind the ingestion queue", async (t) => {
      fake.reset();
      await api.upload('busy', 'large.txt', paragraphs(2048, 'large').join('\n\n'));
      while (fake.requestsTo('cohere').length < LIMIT) await new Promise((resolve) => setTimeout(resolve, 5));
      await api.query('busy', { query: 'large 7: the submarine', search_mode: 'semantic' });
      await api.settle('busy');
      const order = fake.requestsTo('cohere').map((request) => request.body.input_type);
      const queryAt = order.indexOf('search_query');
      t.ok(order.length >= 20, `${order.length} requests for the large document`);
      t.ok(queryAt >= 0 && queryAt < order.length - LIMIT, `the query went out as request ${queryAt + 1} of ${order.length}, ahead of queued ingestion requests`);
    });
  });
}
