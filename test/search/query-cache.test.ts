import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { estimatedBytes, QueryCache } from '../../src/search/query-cache.js';
import { adminTestApp, createTestCollection } from '../support/test-app.js';

const sized = (bytes: number) => ({ bytes });

t.test('the cache is bounded by estimated bytes as well as entries, oldest use first', async (t) => {
  const cache = new QueryCache<{ bytes: number }>({ maxEntries: 3, maxBytes: 100, sizeOf: (value) => value.bytes });
  cache.set('a', sized(40), 60);
  cache.set('b', sized(40), 60);
  t.ok(cache.get('a', 60), 'a is used again, so b is now the oldest');
  cache.set('c', sized(40), 60);
  t.notOk(cache.get('b', 60), '120 bytes > 100: the least recently used entry went');
  t.ok(cache.get('a', 60));
  t.ok(cache.get('c', 60));
  t.same(cache.usage, { entries: 2, bytes: 80 });
  cache.set('huge', sized(101), 60);
  t.notOk(cache.get('huge', 60), 'an answer larger than the cache is not kept');
  t.same(cache.usage, { entries: 2, bytes: 80 }, 'and evicts nothing');
  cache.set('a', sized(10), 60);
  t.same(cache.usage, { entries: 2, bytes: 50 }, 'replacing an entry replaces its bytes');
  for (const key of ['d', 'e']) cache.set(key, sized(1), 60);
  t.same(cache.usage, { entries: 3, bytes: 12 }, 'at most maxEntries answers');
  cache.set('expired', sized(1), 0);
  t.notOk(cache.get('expired', 60), 'a TTL of 0 keeps nothing');
  cache.set('kept', sized(1), 60);
  t.ok(cache.get('kept', 60));
  t.notOk(cache.get('kept', 0), 'the TTL in force now applies to answers stored with a longer one');
});

t.test('query_cache_ttl_s lowered to 0 takes effect at once, for answers already cached too', async (t) => {
  const { app, admin, cookie } = await adminTestApp(t, 'pglite');
  await createTestCollection(app, admin, { name: 'ttl', dimension: 4 });
  t.equal((await app.inject({ method: 'POST', url: '/v1/collections/ttl/vectors/upsert', headers: admin, payload: { vectors: [{ id: 'v', embedding: [1, 0, 0, 0], text: 'walrus tusks' }] } })).statusCode, 200);
  const cached = async () => (await app.inject({ method: 'POST', url: '/v1/collections/ttl/query', headers: admin, payload: { query: 'walrus', search_mode: 'keyword' } })).json().timings.cached === true;
  t.notOk(await cached(), 'computed');
  t.ok(await cached(), 'then from the cache (the default TTL, 60 s)');
  const patched = await app.inject({ method: 'PATCH', url: '/v1/admin/settings', headers: { cookie }, payload: { values: { query_cache_ttl_s: 0 } } });
  t.equal(patched.statusCode, 200, patched.body);
  t.notOk(await cached(), 'not from the cache once the TTL is 0');
  t.notOk(await cached(), 'and not kept either');
});

t.test('QUERY_CACHE_MAX_MB: megabytes, 64 by default', async (t) => {
  t.equal(loadConfig({}).queryCacheMaxBytes, 64 * 1024 * 1024);
  t.equal(loadConfig({ QUERY_CACHE_MAX_MB: '8' }).queryCacheMaxBytes, 8 * 1024 * 1024);
  t.throws(() => loadConfig({ QUERY_CACHE_MAX_MB: 'lots' }), /QUERY_CACHE_MAX_MB must be an integer/);
});

t.test('estimatedBytes grows with text and structure', async (t) => {
  t.ok(estimatedBytes('x'.repeat(1000)) >= 2000, 'strings count two bytes a character');
  t.ok(estimatedBytes({ text: 'x'.repeat(1000), metadata: { a: [1, 2, 3] } }) > estimatedBytes({ text: 'x'.repeat(1000) }));
  t.equal(estimatedBytes(null), 8);
});

t.test('query answers: cached while they fit QUERY_CACHE_MAX_MB, evicted oldest first, too large ones never', async (t) => {
  // Two two-result answers must not fit together, one must; an eight-result answer must not fit
  // alone. The bound is 1.5 answers of two results, as estimated from the first one.
  const { app, services, admin } = await adminTestApp(t, 'pglite', { queryCacheMaxBytes: 1_000_000 });
  await createTestCollection(app, admin, { name: 'sized', dimension: 4 });
  const filler = 'lorem ipsum dolor '.repeat(100);
  const vectors = [
    ...['a1', 'a2'].map((id) => ({ id, text: `alpha ${filler}` })),
    ...['b1', 'b2'].map((id) => ({ id, text: `beta ${filler}` })),
    ...Array.from({ length: 8 }, (_, n) => ({ id: `g${n}`, text: `gamma ${filler}` })),
  ].map((vector, n) => ({ ...vector, embedding: [1, n, 0.5, 0.25] }));
  const upserted = await app.inject({ method: 'POST', url: '/v1/collections/sized/vectors/upsert', headers: admin, payload: { vectors } });
  t.equal(upserted.statusCode, 200, upserted.body);
  const ask = async (query: string) => {
    const response = await app.inject({ method: 'POST', url: '/v1/collections/sized/query', headers: admin, payload: { query, search_mode: 'keyword', top_k: 10 } });
    t.equal(response.statusCode, 200, response.body.slice(0, 300));
    return response.json() as { results: unknown[]; timings: { cached?: boolean } };
  };
  const cached = async (query: string) => (await ask(query)).timings.cached === true;

  const alpha = await ask('alpha');
  t.equal(alpha.results.length, 2);
  t.notOk(alpha.timings.cached, 'first alpha computed');
  const cache = services.queryRuntime.cache;
  const limits = cache as unknown as { maxBytes: number };
  t.equal(limits.maxBytes, 1_000_000, 'the bound comes from the configuration');
  const oneAnswer = cache.usage.bytes;
  t.ok(oneAnswer > 0, `the answer is kept: ~${oneAnswer} bytes`);
  limits.maxBytes = Math.round(1.5 * oneAnswer);

  t.ok(await cached('alpha'), 'repeat from the cache');
  t.notOk(await cached('beta'), 'beta computed; alpha and beta together exceed the bound');
  t.equal(cache.usage.entries, 1);
  t.notOk(await cached('alpha'), 'alpha, the older entry, was evicted');
  t.notOk(await cached('gamma'), 'gamma (eight long results) computed');
  t.notOk(await cached('gamma'), 'and not kept: it alone exceeds the bound');
  t.ok(cache.usage.bytes <= 1.5 * oneAnswer, 'the bound holds');
});
