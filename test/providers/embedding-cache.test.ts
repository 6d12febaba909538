/**
 * The embedding cache (api-contract 3 `embedding_cache_enabled`, 2 `.../embedding-cache/purge`):
 * re-ingesting a corpus makes no provider call, in the same collection or another one with the
 * same model; what makes a vector different (dimension, document or query) is never shared; hit
 * ratios show in the collection's stats and in /v1/stats; purging and disabling work.
 */
import t from 'tap';
import { startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, setupAdmin, testBackends } from '../support/test-app.js';
import { ONE_PARAGRAPH_CHUNKS, paragraphs, providerApi } from './provider-api.js';

const KEY = 'sk-cache-test-key-000111222';
const PER_DOCUMENT = 20;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend, { masterKey: 'cache-master-key' });
    t.teardown(() => ctx.close());
    const cookie = await setupAdmin(ctx.app);
    const api = providerApi(ctx.app, { cookie });
    const openai = (name: string, dimension = 48) => api.createCollection({
      name, embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('openai'), ...ONE_PARAGRAPH_CHUNKS,
    });
    const corpus = [0, 1, 2].map((index) => paragraphs(PER_DOCUMENT, `doc${index}`).join('\n\n'));
    const total = corpus.length * PER_DOCUMENT;
    /** Uploads the corpus; into a collection that has it already, after emptying it (uploads of the same file are skipped as duplicates). */
    const ingestCorpus = async (collection: string, again = false) => {
      if (again) await api.ok('POST', `/v1/collections/${collection}/truncate`);
      for (const [index, text] of corpus.entries()) await api.upload(collection, `doc${index}.txt`, text);
      const documents = await api.settle(collection);
      t.ok(documents.every((document) => document.status === 'ready'), 'every document ready');
    };
    const embeddedTexts = () => fake.requestsTo('openai').reduce((sum, request) => sum + request.body.input.length, 0);
    const instanceEmbedding = async () => (await api.ok('GET', '/v1/stats')).embedding;

    await t.test('first ingestion: every text goes to the provider and into the cache', async (t) => {
      fake.reset();
      await openai('first');
      await ingestCorpus('first');
      t.equal(embeddedTexts(), total);
      const stats = await api.stats('first');
      t.match(stats.embedding, { provider: 'openai', model: 'text-embedding-3-small', cache_hits: 0, cache_misses: total, cache_hit_ratio: 0 });
      t.ok(stats.embedding.tokens > 0);
      t.match(await instanceEmbedding(), { cache_enabled: true, cache_entries: total, cache_misses: total });
    });

    await t.test('re-ingesting the same corpus makes zero provider calls and bills nothing', async (t) => {
      fake.reset();
      const tokensBefore = (await api.stats('first')).embedding.tokens;
      await ingestCorpus('first', true);
      t.equal(fake.requestsTo('openai').length, 0, 'no call in the same collection');
      await openai('second');
      await ingestCorpus('second');
      t.equal(fake.requestsTo('openai').length, 0, 'no call in another collection with the same model');
      const first = (await api.stats('first')).embedding;
      t.match(first, { cache_hits: total, cache_misses: total, cache_hit_ratio: 0.5, tokens: tokensBefore });
      t.match((await api.stats('second')).embedding, { cache_hits: total, cache_misses: 0, cache_hit_ratio: 1, tokens: 0 });
      t.match(await instanceEmbedding(), { cache_entries: total, cache_hits: 2 * total, cache_misses: total, cache_hit_ratio: 0.6667 });
      const answer = await api.query('second', { query: paragraphs(PER_DOCUMENT, 'doc1')[7]!, search_mode: 'semantic', top_k: 1 });
      t.equal(answer.results[0].text, paragraphs(PER_DOCUMENT, 'doc1')[7], 'vectors from the cache rank like fresh ones');
    });

    await t.test('what changes a vector is not shared: dimension, document or query', async (t) => {
      fake.reset();
      await openai('narrow', 24);
      await api.upload('narrow', 'doc0.txt', corpus[0]!);
      await api.settle('narrow');
      t.equal(embeddedTexts(), PER_DOCUMENT, 'another dimension is embedded afresh');
      fake.reset();
      const text = paragraphs(PER_DOCUMENT, 'doc2')[3]!;
      await api.query('first', { query: text, search_mode: 'semantic' });
      t.equal(fake.requestsTo('openai').length, 1, 'a query is embedded as a query, even if its text was a chunk');
      await api.query('second', { query: text, search_mode: 'semantic' });
      t.equal(fake.requestsTo('openai').length, 1, 'the same query again comes from the cache');
    });

    await t.test('purge empties the cache; the next ingestion calls the provider again', async (t) => {
      const entries = (await instanceEmbedding()).cache_entries;
      const purged = await api.ok('POST', '/v1/admin/settings/embedding-cache/purge');
      t.same(purged, { purged: entries });
      t.equal((await instanceEmbedding()).cache_entries, 0);
      fake.reset();
      await ingestCorpus('first', true);
      t.equal(embeddedTexts(), total, 'every text embedded again');
      const audit = await api.ok('GET', '/v1/admin/audit?action=settings.embedding_cache.purge');
      t.equal(audit.total, 1, 'the purge is audited');
    });

    await t.test('embedding_cache_enabled false: the provider is always called and nothing is cached', async (t) => {
      await api.ok('PATCH', '/v1/admin/settings', { values: { embedding_cache_enabled: false } });
      const entries = (await instanceEmbedding()).cache_entries;
      fake.reset();
      await ingestCorpus('second', true);
      t.equal(embeddedTexts(), total, 'cached texts are embedded anyway');
      t.equal((await instanceEmbedding()).cache_entries, entries, 'nothing new is cached');
      t.equal((await instanceEmbedding()).cache_enabled, false);
      await api.ok('POST', '/v1/admin/settings/reset', { keys: ['embedding_cache_enabled'] });
      fake.reset();
      await ingestCorpus('second', true);
      t.equal(fake.requestsTo('openai').length, 0, 'enabled again: served from the cache');
    });
  });
}
