/**
 * Usage accounting (spec 2.9, 4.4, api-contract 5): embedding tokens per collection priced by the
 * fixed rate card (self-hosted and local cost 0), the report's windows and totals, who may read
 * it, and the model list of /v1/embeddings/models.
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { startProviderFake } from '../support/provider-fakes.js';
import { bearer, buildTestApp, createApiKey, setupAdmin, testBackends } from '../support/test-app.js';
import { ONE_PARAGRAPH_CHUNKS, paragraphs, providerApi } from './provider-api.js';

const KEY = 'sk-usage-test-key-424242';
const DAY_MS = 86_400_000;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const cookie = await setupAdmin(ctx.app);
    const api = providerApi(ctx.app, { cookie });

    await api.createCollection({ name: 'billed', embedding_provider: 'openai', embedding_model: 'text-embedding-3-large', dimension: 32, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('openai'), ...ONE_PARAGRAPH_CHUNKS });
    await api.createCollection({ name: 'selfhosted', embedding_provider: 'openai_compatible', embedding_model: 'nomic-embed-text', dimension: 768, embedding_base_url: fake.baseUrl('compatible'), ...ONE_PARAGRAPH_CHUNKS });
    await api.createCollection({ name: 'idle' });
    await api.createCollection({ name: 'doomed', embedding_provider: 'voyage', embedding_model: 'voyage-3.5-lite', dimension: 256, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('voyage'), ...ONE_PARAGRAPH_CHUNKS });
    for (const name of ['billed', 'selfhosted', 'doomed']) {
      await api.upload(name, 'corpus.txt', paragraphs(12, name).join('\n\n'));
      await api.settle(name);
    }
    for (const query of ['valley', 'marker', 'lighthouse']) await api.query('billed', { query, search_mode: 'semantic' });
    await api.query('selfhosted', { query: 'glacier', search_mode: 'keyword' });
    const billedTokens = (await api.stats('billed')).embedding.tokens;
    const selfhostedTokens = (await api.stats('selfhosted')).embedding.tokens;
    const doomedTokens = (await api.stats('doomed')).embedding.tokens;
    t.ok(billedTokens > 0 && selfhostedTokens > 0 && doomedTokens > 0);
    await api.ok('DELETE', '/v1/collections/doomed', undefined, 204);

    await t.test('the report: window, totals, per-collection rows, rate-card costs', async (t) => {
      const report = await api.ok('GET', '/v1/usage');
      t.match(report, { window_days: 30, queries_total: 4, queries_per_day_avg: 0.13, documents_total: 2, chunks_total: 24 });
      t.same(report.by_collection.map((row: { collection: string }) => row.collection), ['billed', 'idle', 'selfhosted'], 'every collection, idle ones included');
      const [billed, idle, selfhosted] = report.by_collection;
      t.match(billed, { documents: 1, chunks: 12, queries: 3, embedding_tokens: billedTokens, embedding_cost_usd_estimate: Math.round(0.13 * billedTokens) / 1e6 });
      t.ok(billed.avg_latency_ms > 0);
      t.ok(billed.storage_bytes > 12 * 32 * 4, 'storage counts files, text and vectors');
      t.same(idle, { collection: 'idle', documents: 0, chunks: 0, storage_bytes: 0, embedding_tokens: 0, embedding_cost_usd_estimate: 0, queries: 0, avg_latency_ms: 0 });
      t.match(selfhosted, { embedding_tokens: selfhostedTokens, embedding_cost_usd_estimate: 0, queries: 1 }, 'self-hosted models cost 0');
      const voyageCost = Math.round(0.02 * doomedTokens) / 1e6;
      t.equal(report.embedding_tokens_total, billedTokens + selfhostedTokens + doomedTokens, "a deleted collection's tokens still count in the total");
      t.equal(report.embedding_cost_usd_estimate, Math.round((billed.embedding_cost_usd_estimate + voyageCost) * 1e6) / 1e6);
      t.equal(report.storage_bytes_total, billed.storage_bytes + selfhosted.storage_bytes);
      t.equal(report.timeline.length, 30);
      const today = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS).toISOString();
      t.match(report.timeline[29], { date: today, queries: 4 });
      t.equal(report.timeline[0].date, new Date(Date.parse(today) - 29 * DAY_MS).toISOString());
      t.ok(report.avg_latency_ms > 0);
      t.same(await api.ok('GET', '/v1/status/usage'), report, '/v1/status/usage answers the same report');
    });

    await t.test('window_days: 1 to 365; anything else is a 400', async (t) => {
      const one = await api.ok('GET', '/v1/usage?window_days=1');
      t.equal(one.timeline.length, 1);
      t.equal(one.queries_total, 4);
      for (const value of ['0', '366', 'abc', '2.5']) assertError(t, await api.send('GET', `/v1/usage?window_days=${value}`), 400, /window_days/, value);
      // Number() read these as 16, 10 and 10: a query string's numbers are plain decimals.
      for (const value of ['0x10', '1e1', '%2010', '10%20', '+10']) {
        assertError(t, await api.send('GET', `/v1/usage?window_days=${value}`), 400, /^querystring\.window_days must be integer$/, value);
      }
      t.equal((await api.ok('GET', '/v1/usage?window_days=010')).window_days, 10, 'leading zeros are still decimal');
    });

    await t.test('keys need audit:read; a pinned key sees its own collection and not /v1/status/usage', async (t) => {
      const auditor = await createApiKey(ctx.app, cookie, { name: 'auditor', scopes: ['audit:read'] });
      t.equal((await ctx.app.inject({ url: '/v1/usage', headers: bearer(auditor.key) })).json().by_collection.length, 3);
      const reader = await createApiKey(ctx.app, cookie, { name: 'reader', scopes: ['collection:read'] });
      assertError(t, await ctx.app.inject({ url: '/v1/usage', headers: bearer(reader.key) }), 403, 'API key missing required scope: audit:read');
      const pinned = await createApiKey(ctx.app, cookie, { name: 'pinned', scopes: ['audit:read'], collection: 'billed' });
      const own = (await ctx.app.inject({ url: '/v1/usage', headers: bearer(pinned.key) })).json();
      t.same(own.by_collection.map((row: { collection: string }) => row.collection), ['billed']);
      t.match(own, { queries_total: 3, documents_total: 1, chunks_total: 12, embedding_tokens_total: billedTokens });
      assertError(t, await ctx.app.inject({ url: '/v1/status/usage', headers: bearer(pinned.key) }), 403, 'API key is pinned to collection billed');
    });

    await t.test('/v1/embeddings/models: built-in and rate-card models with dimension and price', async (t) => {
      const { data } = await api.ok('GET', '/v1/embeddings/models');
      const find = (provider: string, model: string | null) => data.find((entry: { provider: string; model: string | null }) => entry.provider === provider && entry.model === model);
      t.match(find('local', 'local-hash-384'), { dimension: 384, price_per_million_tokens_usd: 0, hosted: false, default: true, configurable_dimension: true, dimension_range: { min: 2, max: 16000 } });
      t.match(find('openai', 'text-embedding-3-small'), { dimension: 1536, price_per_million_tokens_usd: 0.02, hosted: true, default: true, dimension_range: { min: 1, max: 1536 } });
      t.match(find('openai', 'text-embedding-ada-002'), { dimension: 1536, price_per_million_tokens_usd: 0.1, configurable_dimension: false, dimension_options: [1536] });
      t.match(find('cohere', 'embed-english-v3.0'), { dimension: 1024, price_per_million_tokens_usd: 0.1, default: true });
      t.match(find('cohere', 'embed-v4.0'), { dimension: 1536, dimension_options: [256, 512, 1024, 1536], price_per_million_tokens_usd: 0.12 });
      t.match(find('voyage', 'voyage-3.5'), { dimension: 1024, dimension_options: [256, 512, 1024, 2048], price_per_million_tokens_usd: 0.06 });
      t.match(find('openai_compatible', null), { dimension: null, price_per_million_tokens_usd: 0, hosted: false });
      const key = await createApiKey(ctx.app, cookie, { name: 'any', scopes: ['chat:read'] });
      t.equal((await ctx.app.inject({ url: '/v1/embeddings/models', headers: bearer(key.key) })).statusCode, 200, 'any caller may list models');
    });

    await t.test('/v1/embeddings/models is a list like the others (api-contract 1): {data, total, limit, offset}', async (t) => {
      const all = await api.ok('GET', '/v1/embeddings/models');
      t.match(all, { limit: 50, offset: 0 }, 'default limit 50, offset 0');
      t.ok(all.total > 3, 'several models');
      t.equal(all.data.length, all.total, 'every model fits on the default page');
      t.same(await api.ok('GET', '/v1/embeddings/models?limit=2&offset=1'), { data: all.data.slice(1, 3), total: all.total, limit: 2, offset: 1 });
      t.same(await api.ok('GET', `/v1/embeddings/models?offset=${all.total}`), { data: [], total: all.total, limit: 50, offset: all.total }, 'past the end: an empty page');
      for (const query of ['limit=0', 'limit=501', 'offset=-1', 'limit=abc']) {
        assertError(t, await api.send('GET', `/v1/embeddings/models?${query}`), 400, /limit|offset/, query);
      }
    });

    await t.test("a window's embedding tokens: from its first day on, today's included", async (t) => {
      const dayBefore = (days: number) => new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS - days * DAY_MS).toISOString().slice(0, 10);
      const billedId = (await api.ok('GET', '/v1/collections/billed')).id;
      // Tokens of two days ago, as the ledger keeps them.
      await ctx.services.sql(
        `insert into embedding_usage (collection_id, day, provider, model, texts, tokens, cache_hits, cache_misses)
         values (?, ?::date, 'openai', 'text-embedding-3-large', 1, 1000, 0, 0)`, [billedId, dayBefore(2)],
      );
      const tokensIn = async (windowDays: number) => {
        const report = await api.ok('GET', `/v1/usage?window_days=${windowDays}`);
        return [report.embedding_tokens_total, report.by_collection.find((row: { collection: string }) => row.collection === 'billed').embedding_tokens];
      };
      const today = billedTokens + selfhostedTokens + doomedTokens;
      t.same(await tokensIn(1), [today, billedTokens], "a one-day window is today's tokens");
      t.same(await tokensIn(2), [today, billedTokens], 'two days: yesterday had none');
      t.same(await tokensIn(3), [today + 1000, billedTokens + 1000], 'three days begin with the day of the 1,000 tokens');
    });
  });
}
