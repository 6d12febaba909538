/**
 * A query waits for its embedding or reranking provider at most PROVIDER_QUERY_TIMEOUT_MS, retries
 * and the wait for a free connection included. Before, a query's calls had the retries of
 * ingestion's: a provider that hung held a query for five timeouts (150 s with the defaults, past
 * the client's own 120 s, which then sent it again), and a 429 asking for 30 s held it for minutes.
 * Ingestion's calls are not bound by it.
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, setupAdmin } from '../support/test-app.js';
import { providerApi } from './provider-api.js';

const KEY = 'sk-test-QUERY-TIMEOUT-0123456789abcdef';

async function budgetApp(t: { teardown(fn: () => Promise<void>): void }, overrides: Record<string, number> = {}) {
  const fake = await startProviderFake({ apiKey: KEY });
  t.teardown(() => fake.close());
  // Each attempt may take 3 s and there are 4 retries: only the query's budget of 1 s ends a query's call sooner.
  const ctx = await buildTestApp('pglite', { masterKey: 'test-master-key', providerTimeoutMs: 3000, providerMaxRetries: 4, providerQueryTimeoutMs: 1000, ...overrides });
  t.teardown(() => ctx.close());
  const api = providerApi(ctx.app, { cookie: await setupAdmin(ctx.app) });
  await api.createCollection({ name: 'docs', embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 64, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('openai') });
  return { fake, api };
}

t.test('a provider that hangs: the query answers 502 once its budget is spent, without retrying past it', async (t) => {
  const { fake, api } = await budgetApp(t);
  fake.failNext('openai', { hang: true }, 10);
  const answer = await api.send('POST', '/v1/collections/docs/query', { query: 'lighthouse', search_mode: 'semantic' });
  assertError(t, answer, 502, 'openai did not answer within 1000 ms (PROVIDER_QUERY_TIMEOUT_MS)', 'a hanging provider');
  t.equal(fake.requestsTo('openai').length, 1, 'one attempt: no time was left for another');
});

t.test('a 429 asking for 30 s: the query answers 502 at once instead of waiting', async (t) => {
  const { fake, api } = await budgetApp(t);
  fake.failNext('openai', { status: 429, headers: { 'retry-after': '30' }, body: { error: { message: 'Rate limit reached for requests' } } }, 10);
  const answer = await api.send('POST', '/v1/collections/docs/query', { query: 'lighthouse', search_mode: 'hybrid' });
  assertError(t, answer, 502, 'openai answered 429: Rate limit reached for requests', 'a rate-limited provider');
  t.equal(fake.requestsTo('openai').length, 1);
  const keyword = await api.send('POST', '/v1/collections/docs/query', { query: 'lighthouse', search_mode: 'keyword' });
  t.equal(keyword.statusCode, 200, 'keyword queries need no provider');
});

t.test('a 429 for an account out of credit: 502 at once, not retried as a rate limit', async (t) => {
  const { fake, api } = await budgetApp(t, { providerQueryTimeoutMs: 10_000 });
  fake.failNext('openai', { status: 429, body: { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', code: 'insufficient_quota' } } }, 10);
  const answer = await api.send('POST', '/v1/collections/docs/query', { query: 'lighthouse', search_mode: 'semantic' });
  assertError(t, answer, 502, 'openai answered 429: You exceeded your current quota, please check your plan and billing details.', 'no credit');
  t.equal(fake.requestsTo('openai').length, 1);
});

t.test('retries that fit in the budget are still made', async (t) => {
  const { fake, api } = await budgetApp(t, { providerQueryTimeoutMs: 5000 });
  fake.failNext('openai', { status: 503, body: { error: { message: 'overloaded' } } }, 1);
  const answer = await api.send('POST', '/v1/collections/docs/query', { query: 'lighthouse', search_mode: 'semantic' });
  t.equal(answer.statusCode, 200, answer.body);
  t.equal(fake.requestsTo('openai').length, 2, 'a failure and the answer');
});

t.test('a reranker that hangs: 502 within the budget', async (t) => {
  const { fake, api } = await budgetApp(t);
  await api.createCollection({ name: 'reranked', reranking_enabled: true, reranking_model: 'cohere/rerank-v3.5', reranking_base_url: fake.baseUrl('cohere'), reranking_api_key: KEY });
  await api.upload('reranked', 'a.txt', 'The lighthouse keeper logs the tides.');
  await api.settle('reranked');
  fake.failNext('cohere-rerank', { hang: true }, 10);
  const answer = await api.send('POST', '/v1/collections/reranked/query', { query: 'lighthouse', search_mode: 'keyword' });
  assertError(t, answer, 502, 'cohere did not answer within 1000 ms (PROVIDER_QUERY_TIMEOUT_MS)', 'a hanging reranker');
  t.equal(fake.requestsTo('cohere-rerank').length, 1);
});

t.test('a query behind ingestion calls holding every connection: 502 when its budget is spent, not when they end', async (t) => {
  const { fake, api } = await budgetApp(t, { providerConcurrency: 1 });
  fake.failNext('openai', { hang: true }, 1);
  await api.upload('docs', 'a.txt', 'The harbour lighthouse keeps the tide tables.');
  for (let waited = 0; fake.requestsTo('openai').length === 0; waited += 10) {
    if (waited > 20_000) throw new Error('the document never reached embedding');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const answer = await api.send('POST', '/v1/collections/docs/query', { query: 'lighthouse', search_mode: 'semantic' });
  assertError(t, answer, 502, 'openai had no free connection within 1000 ms (PROVIDER_QUERY_TIMEOUT_MS): PROVIDER_CONCURRENCY (1) requests in flight', 'every connection busy');
  t.equal(fake.requestsTo('openai').length, 1, 'the query sent nothing');
  const [document] = await api.settle('docs');
  t.equal(document!.status, 'ready', 'ingestion\'s call is not bound by the query budget: it timed out after 3 s and its retry succeeded');
});

t.test('ingestion calls slower than the query budget succeed', async (t) => {
  const { fake, api } = await budgetApp(t);
  fake.latencyMs = 1500;
  await api.upload('docs', 'slow.txt', 'A slow provider still embeds the orchard notes.');
  const [document] = await api.settle('docs');
  t.equal(document!.status, 'ready', document!.error ?? '');
  t.equal(fake.requestsTo('openai').length, 1, 'answered on the first attempt');
});
