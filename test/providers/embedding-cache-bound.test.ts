/**
 * EMBEDDING_CACHE_MAX_MB (embedding-cache-bound.ts): beyond it, the oldest cached vectors are
 * deleted, as few as bring the cache under; the newest still save their provider calls.
 */
import t from 'tap';
import { startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, setupAdmin, testBackends } from '../support/test-app.js';
import { ONE_PARAGRAPH_CHUNKS, paragraphs, providerApi } from './provider-api.js';

const KEY = 'sk-cache-bound-key-000333444';
const PER_DOCUMENT = 20;
const DIMENSION = 48;
/** One cached vector: 48 float32 values as base64. */
const VECTOR_BYTES = Math.ceil((DIMENSION * 4) / 3) * 4;
/** Room for 23 vectors: one document's 20 and 3 more. */
const MAX_BYTES = 23 * VECTOR_BYTES + 10;

for (const backend of testBackends()) {
  t.test(`${backend}: the oldest embeddings go first once the cache outgrows its bound`, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend, { masterKey: 'cache-bound-master-key', embeddingCacheMaxBytes: MAX_BYTES });
    t.teardown(() => ctx.close());
    const api = providerApi(ctx.app, { cookie: await setupAdmin(ctx.app) });
    const openai = (name: string) => api.createCollection({
      name, embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: DIMENSION, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('openai'), ...ONE_PARAGRAPH_CHUNKS,
    });
    const embeddedTexts = () => fake.requestsTo('openai').reduce((sum, request) => sum + request.body.input.length, 0);
    const cacheEntries = async () => (await api.ok('GET', '/v1/stats')).embedding.cache_entries as number;
    const ingest = async (collection: string, document: string) => {
      await api.upload(collection, `${document}.txt`, paragraphs(PER_DOCUMENT, document).join('\n\n'));
      t.ok((await api.settle(collection)).every((row) => row.status === 'ready'), `${document} ready`);
    };

    await openai('older');
    await ingest('older', 'doc0');
    t.equal(await ctx.services.embeddingCacheBound.enforce(), 0, 'within the bound, nothing is deleted');
    await openai('newer');
    await ingest('newer', 'doc1');
    t.equal(await cacheEntries(), 2 * PER_DOCUMENT);
    t.equal(await ctx.services.embeddingCacheBound.enforce(), 17, 'as few of the oldest as bring it under: 17 of the first document\'s');
    t.equal(await cacheEntries(), 23);
    t.ok(await ctx.services.embeddingCache.bytes() <= MAX_BYTES, 'the cache is within its bound');

    fake.reset();
    await openai('again');
    await ingest('again', 'doc1');
    t.equal(fake.requestsTo('openai').length, 0, 'the newest document is still served from the cache');
    await ingest('again', 'doc0');
    t.equal(embeddedTexts(), 17, 'of the older one, only the evicted texts go to the provider again');
  });
}

t.test('EMBEDDING_CACHE_MAX_MB 0 leaves the cache unbounded', async (t) => {
  const ctx = await buildTestApp('pglite', { embeddingCacheMaxBytes: 0 });
  t.teardown(() => ctx.close());
  await ctx.services.sql(
    `insert into embedding_cache (model_key, text_hash, embedding, created_at)
     select 'model', 'hash' || n, repeat('A', 4096), now() from generate_series(1, 50) as n`,
  );
  t.equal(await ctx.services.embeddingCacheBound.enforce(), 0);
  t.equal(await ctx.services.embeddingCache.size(), 50);
  t.equal(await ctx.services.embeddingCache.evictOldest(10 * 4096), 40, 'with a bound, the same cache would lose 40');
});
