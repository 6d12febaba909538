import t from 'tap';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';
import {
  adminTestApp, bearer, createApiKey, createTestCollection, multipartUpload, testBackends, waitForIngestion,
} from '../support/test-app.js';
import { assertError } from '../support/assertions.js';


const unit = (vector: number[]) => {
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
};
const dot = (a: number[], b: number[]) => a.reduce((sum, value, index) => sum + value * b[index]!, 0);

/**
 * Hand-built 4-dimensional vectors around the local embedding of the query text (queries are
 * embedded by the collection's local model, which makes `dimension`-sized vectors): `same` points
 * the query's way, `near` a little off, `far` nearly opposite.
 */
const QUERY = 'orchard apple';
const q = Array.from(hashedTextVector(QUERY, 4));
// A unit vector orthogonal to q (Gram-Schmidt from an axis that is not q).
const axis = Math.abs(q[0]!) < 0.9 ? [1, 0, 0, 0] : [0, 1, 0, 0];
const w = unit(axis.map((value, index) => value - dot(axis, q) * q[index]!));
const SAME = q.map((value) => value * 3);
const NEAR = q.map((value, index) => value + 0.5 * w[index]!);
const FAR = q.map((value, index) => -value + 0.1 * w[index]!);
const NEAR_SCORE = dot(unit(NEAR), q);
const FAR_SCORE = dot(unit(FAR), q);

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, cookie, admin } = ctx;

    const createCollection = (payload: Record<string, unknown>) => createTestCollection(app, admin, payload);
    const upsert = (name: string, payload: unknown, headers: Record<string, string> = admin) =>
      app.inject({ method: 'POST', url: `/v1/collections/${name}/vectors/upsert`, headers, payload: payload as object });
    const remove = (name: string, payload: unknown, headers: Record<string, string> = admin) =>
      app.inject({ method: 'POST', url: `/v1/collections/${name}/vectors/delete`, headers, payload: payload as object });
    const query = async (name: string, payload: Record<string, unknown>) => {
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload: { skip_cache: true, ...payload } });
      if (response.statusCode !== 200) throw new Error(`query: ${response.statusCode} ${response.body}`);
      return response.json() as { results: any[]; total: number };
    };
    const idsOf = (answer: { results: any[] }) => answer.results.map((result) => result.id);
    const stats = async (name: string) => (await app.inject({ url: `/v1/collections/${name}/stats`, headers: admin })).json();

    const raw4 = await createCollection({ name: 'raw4', dimension: 4 });
    t.equal(raw4.dimension, 4);

    await t.test('any finite scale is accepted and ranks by direction (stored at length 1)', async (t) => {
      const scaled = await createCollection({ name: 'scaled', dimension: 4 });
      t.equal(scaled.dimension, 4);
      // Beyond float32's range, within it but squaring past it, and below its smallest value.
      const scales = { huge: 1e300, large: 1e30, tiny: 1e-310 };
      for (const [name, scale] of Object.entries(scales)) {
        const response = await upsert('scaled', { vectors: [{ id: name, embedding: q.map((value) => value * scale), text: `${name} vector` }] });
        t.equal(response.statusCode, 200, `${name}: ${response.body}`);
        const answer = await query('scaled', { query: QUERY, search_mode: 'semantic', filters: {}, top_k: 10 });
        const hit = answer.results.find((result) => result.id === name);
        t.ok(hit, `${name}: found by a query in its direction`);
        t.ok(Math.abs(hit?.score - 1) < 1e-4, `${name}: score ${hit?.score} is 1`);
        await remove('scaled', { ids: [name] });
      }
    });

    await t.test('a collection another replica deleted, still cached here: 404, nothing written', async (t) => {
      const gone = await createCollection({ name: 'gone-elsewhere', dimension: 4 });
      t.equal((await query('gone-elsewhere', { query: QUERY })).total, 0, 'looked up, so this process caches it');
      // Another replica's delete: straight to the database, this process's directory is not told.
      await ctx.services.sql('delete from collections where id = ?', [gone.id]);
      const response = await upsert('gone-elsewhere', { vectors: [{ id: 'late', embedding: SAME, text: 'late arrival' }] });
      assertError(t, response, 404, /gone-elsewhere was deleted while its vectors were written/, 'upsert into it');
      const [left] = await ctx.services.sql<{ count: string | number }>('select count(*) as count from chunks where collection_id = ?', [gone.id]);
      t.equal(Number(left!.count), 0, 'no chunk row');
    });

    await t.test('a vector store that fails the write: new ids are taken back, replaced ids keep their text', async (t) => {
      await createCollection({ name: 'failing-store', dimension: 4 });
      t.same((await upsert('failing-store', { vectors: [{ id: 'kept', embedding: SAME, text: 'lighthouse keeper', metadata: { era: 'old' } }] })).json(), { upserted: 1 });
      const { vectorStore } = ctx.services.indexes;
      const storeUpsert = vectorStore.upsert;
      vectorStore.upsert = async () => { throw new Error('vector store is away'); };
      const failed = await upsert('failing-store', { vectors: [
        { id: 'kept', embedding: FAR, text: 'submarine captain', metadata: { era: 'new' } },
        { id: 'added', embedding: NEAR, text: 'windmill miller' },
      ] });
      vectorStore.upsert = storeUpsert;
      t.equal(failed.statusCode, 500, failed.body);
      const rows = await ctx.services.sql<{ id: string; text: string; metadata: Record<string, unknown> }>(
        'select c.id, c.text, c.metadata from chunks c join collections k on k.id = c.collection_id where k.name = ? order by c.id', ['failing-store'],
      );
      t.same(rows.map((row) => [row.id, row.text, row.metadata.era]), [['kept', 'lighthouse keeper', 'old']], 'the added row is gone, the replaced one is as before');
      t.same(idsOf(await query('failing-store', { query: 'windmill miller', search_mode: 'keyword' })), [], 'keyword: the added id is not found');
      t.same(idsOf(await query('failing-store', { query: 'submarine captain', search_mode: 'keyword' })), [], 'keyword: nor the text that was not stored');
      t.same(idsOf(await query('failing-store', { query: 'lighthouse keeper', search_mode: 'keyword' })), ['kept'], 'keyword: the previous text is');
      // The only vector left is kept's, in the query's direction: semantic and hybrid find it alone.
      for (const mode of ['semantic', 'hybrid']) {
        t.same(idsOf(await query('failing-store', { query: QUERY, search_mode: mode })), ['kept'], `${mode}: only the previous vector`);
      }
      t.match(await stats('failing-store'), { raw_vectors: 1, vectors: 1, chunks: 1 });
      t.same((await upsert('failing-store', { vectors: [{ id: 'added', embedding: NEAR, text: 'windmill miller' }] })).json(), { upserted: 1 }, 'a retry once the store is back');
      t.same(idsOf(await query('failing-store', { query: 'windmill miller', search_mode: 'keyword' })), ['added']);
    });

    await t.test('upsert: 200 {upserted}; semantic order follows cosine similarity', async (t) => {
      const response = await upsert('raw4', {
        vectors: [
          { id: 'same', embedding: SAME, text: 'crimson orchard fruit', metadata: { kind: 'fruit', rank: 1 } },
          { id: 'near', embedding: NEAR, text: 'golden pear harvest', metadata: { kind: 'fruit', rank: 2 } },
          { id: 'far', embedding: FAR, text: 'winter storm warning', metadata: { kind: 'weather' } },
        ],
      });
      t.equal(response.statusCode, 200, response.body);
      t.same(response.json(), { upserted: 3 });
      t.match(await stats('raw4'), { raw_vectors: 3, vectors: 3, chunks: 3, documents: 0 });

      const semantic = await query('raw4', { query: QUERY, search_mode: 'semantic' });
      t.same(idsOf(semantic), ['same', 'near'], 'default min_score 0 drops the opposite vector');
      t.ok(Math.abs(semantic.results[0].score - 1) < 1e-3, `same scores 1 (${semantic.results[0].score})`);
      t.ok(Math.abs(semantic.results[1].score - NEAR_SCORE) < 1e-3, `near scores its cosine ${NEAR_SCORE} (${semantic.results[1].score})`);
      const everything = await query('raw4', { query: QUERY, search_mode: 'semantic', min_score: -1 });
      t.same(idsOf(everything), ['same', 'near', 'far']);
      t.ok(Math.abs(everything.results[2].score - FAR_SCORE) < 1e-3, `far scores its cosine ${FAR_SCORE}`);
      t.same(idsOf(await query('raw4', { query: QUERY, search_mode: 'semantic', top_k: 1 })), ['same'], 'top_k');
      t.same(idsOf(await query('raw4', { query: QUERY, search_mode: 'semantic', min_score: 0.95 })), ['same'], 'min_score');

      const [first] = semantic.results;
      t.same(first, {
        ...first,
        id: 'same', document_id: null, chunk_index: 0, text: 'crimson orchard fruit', metadata: { kind: 'fruit', rank: 1 }, collection: 'raw4',
      }, 'a raw result: the given id, text and metadata, document_id null');
      const filtered = await query('raw4', { query: QUERY, search_mode: 'semantic', min_score: -1, filters: { kind: 'weather' } });
      t.same(idsOf(filtered), ['far'], 'metadata filters apply to raw vectors');
    });

    await t.test('keyword and hybrid find raw vectors through their text', async (t) => {
      const keyword = await query('raw4', { query: 'pear harvest', search_mode: 'keyword' });
      t.same(idsOf(keyword), ['near']);
      t.match(keyword.results[0], { id: 'near', document_id: null, text: 'golden pear harvest', metadata: { kind: 'fruit', rank: 2 } });
      t.ok(keyword.results[0].score > 0);
      t.same(idsOf(await query('raw4', { query: 'storm', search_mode: 'keyword' })), ['far']);
      t.same(idsOf(await query('raw4', { query: 'nothing matches this', search_mode: 'keyword' })), []);
      const hybrid = await query('raw4', { query: 'pear harvest', search_mode: 'hybrid', min_score: -1 });
      t.equal(hybrid.results[0]?.id, 'near', 'the keyword match leads the fusion');
      t.same([...idsOf(hybrid)].sort(), ['far', 'near', 'same'], 'vector hits join it');
      t.ok(hybrid.results.every((result) => result.document_id === null));
      t.type(hybrid.results[0].scores?.keyword, 'number', 'per-list scores');
      t.type(hybrid.results[0].scores?.semantic, 'number');
    });

    await t.test('a semantic query finds the vector built from its own text (384 dimensions)', async (t) => {
      await createCollection({ name: 'raw384' });
      const texts = { tide: 'tide pools hold anemones and crabs', volcano: 'volcanic eruptions spread ash clouds', chess: 'the queen gambit opens the chess game' };
      const response = await upsert('raw384', {
        vectors: Object.entries(texts).map(([id, text]) => ({ id, embedding: Array.from(hashedTextVector(text, 384)), text, metadata: { topic: id } })),
      });
      t.same(response.json(), { upserted: 3 });
      for (const [id, text] of Object.entries(texts)) {
        const semantic = await query('raw384', { query: text, search_mode: 'semantic' });
        t.equal(semantic.results[0]?.id, id, `"${text}" finds ${id} first`);
        t.ok(Math.abs(semantic.results[0].score - 1) < 1e-3);
        t.same(semantic.results[0].metadata, { topic: id });
      }
    });

    await t.test('upsert of an existing id replaces text, metadata and vector', async (t) => {
      const response = await upsert('raw4', { vectors: [{ id: 'near', embedding: NEAR, text: 'blue plum jam', metadata: { kind: 'preserve' } }] });
      t.same(response.json(), { upserted: 1 });
      t.same(idsOf(await query('raw4', { query: 'pear harvest', search_mode: 'keyword' })), [], 'the old text is no longer found');
      const plum = await query('raw4', { query: 'plum', search_mode: 'keyword' });
      t.same(idsOf(plum), ['near']);
      t.same(plum.results[0].metadata, { kind: 'preserve' }, 'metadata replaced, not merged');
      t.same(idsOf(await query('raw4', { query: QUERY, search_mode: 'semantic', min_score: -1, filters: { kind: 'fruit' } })), ['same'], 'old metadata no longer filters');
      const moved = await upsert('raw4', { vectors: [{ id: 'far', embedding: SAME, text: 'winter storm warning', metadata: { kind: 'weather' } }] });
      t.same(moved.json(), { upserted: 1 });
      const semantic = await query('raw4', { query: QUERY, search_mode: 'semantic' });
      t.same([...idsOf(semantic)].slice(0, 2).sort(), ['far', 'same'], 'the replaced vector moved next to the query');
      t.match(await stats('raw4'), { raw_vectors: 3, vectors: 3, chunks: 3 }, 'replacing adds nothing');
      // Back to the original layout for the next checks.
      t.same((await upsert('raw4', { vectors: [{ id: 'far', embedding: FAR, text: 'winter storm warning', metadata: { kind: 'weather' } }] })).json(), { upserted: 1 });
    });

    await t.test('refused upserts write nothing', async (t) => {
      const before = await stats('raw4');
      const unchanged = async (what: string) => {
        t.match(await stats('raw4'), { raw_vectors: before.raw_vectors, vectors: before.vectors, chunks: before.chunks }, `${what}: nothing written`);
        t.same(idsOf(await query('raw4', { query: 'fresh kiwi', search_mode: 'keyword' })), [], `${what}: the valid item of the request is not searchable`);
      };
      const fresh = { id: 'fresh', embedding: [0.1, 0.2, 0.3, 0.4], text: 'fresh kiwi', metadata: {} };
      assertError(t, await upsert('raw4', { vectors: [fresh, { id: 'short', embedding: [1, 2, 3], text: 'x' }] }), 400, /vectors\[1\].*\b3\b.*\b4\b/, 'wrong length');
      await unchanged('wrong length');
      assertError(t, await upsert('raw4', { vectors: [fresh, { id: 'long', embedding: [1, 2, 3, 4, 5], text: 'x' }] }), 400, /vectors\[1\].*\b5\b.*\b4\b/, 'too long');
      await unchanged('too long');
      assertError(t, await upsert('raw4', { vectors: [fresh, { id: 'zero', embedding: [0, 0, 0, 0], text: 'x' }] }), 400, /vectors\[1\].*zero/, 'all zeros');
      await unchanged('all zeros');
      const infinite = await app.inject({
        method: 'POST', url: '/v1/collections/raw4/vectors/upsert', headers: { ...admin, 'content-type': 'application/json' },
        payload: '{"vectors":[{"id":"fresh","embedding":[0.1,0.2,0.3,0.4],"text":"fresh kiwi"},{"id":"inf","embedding":[1e999,0,0,1],"text":"x"}]}',
      });
      assertError(t, infinite, 400, /vectors/, 'an infinite number (1e999)');
      await unchanged('infinite');
      assertError(t, await upsert('raw4', { vectors: [fresh, { id: 'nan', embedding: [null, 0, 0, 1], text: 'x' }] }), 400, /embedding/, 'null in the embedding (NaN in JSON)');
      assertError(t, await upsert('raw4', { vectors: [fresh, { id: 'str', embedding: ['1', 0, 0, 1], text: 'x' }] }), 400, /embedding/, 'a string in the embedding');
      await unchanged('non-numbers');
      assertError(t, await upsert('raw4', { vectors: [fresh, { ...fresh, text: 'other kiwi' }] }), 400, /fresh/, 'duplicate ids in one request');
      await unchanged('duplicate ids');
      assertError(t, await upsert('raw4', { vectors: [] }), 400, /vectors/, 'no vectors');
      assertError(t, await upsert('raw4', {}), 400, /vectors/, 'no vectors field');
      assertError(t, await upsert('raw4', { vectors: [{ id: 'x', text: 'no embedding' }] }), 400, /embedding/, 'missing embedding');
      assertError(t, await upsert('raw4', { vectors: [{ ...fresh, id: '' }] }), 400, /id/, 'empty id');
      assertError(t, await upsert('raw4', { vectors: [{ ...fresh, metadata: ['a'] }] }), 400, /metadata/, 'metadata an array');
      assertError(t, await upsert('raw4', { vectors: [{ ...fresh, colour: 'green' }] }), 400, /colour/, 'unknown field');
      // Beside `vectors`, too: a field another API takes there (a namespace, say) would be dropped unread.
      assertError(t, await upsert('raw4', { vectors: [fresh], namespace: 'fruit' }), 400, /namespace/, 'unknown field beside vectors');
      await unchanged('schema errors');
      assertError(t, await upsert('missing-collection', { vectors: [fresh] }), 404, /missing-collection/, 'unknown collection');
    });

    await t.test('tenant_field: the tenant is required in metadata and separates queries', async (t) => {
      await createCollection({ name: 'raw-tenant', dimension: 4, tenant_field: 'ns' });
      assertError(t, await upsert('raw-tenant', { vectors: [{ id: 'a1', embedding: SAME, text: 'tenant apple' }] }), 400, /\bns\b/, 'no metadata');
      assertError(t, await upsert('raw-tenant', { vectors: [{ id: 'a1', embedding: SAME, text: 'tenant apple', metadata: { other: 'x' } }] }), 400, /\bns\b/, 'no tenant');
      assertError(t, await upsert('raw-tenant', {
        vectors: [{ id: 'a1', embedding: SAME, text: 'tenant apple', metadata: { ns: 'a' } }, { id: 'b1', embedding: SAME, text: 'tenant apple', metadata: {} }],
      }), 400, /vectors\[1\].*\bns\b/, 'second item without tenant');
      t.match(await stats('raw-tenant'), { raw_vectors: 0, vectors: 0 }, 'nothing written');
      const ok = await upsert('raw-tenant', {
        vectors: [
          { id: 'a1', embedding: SAME, text: 'tenant apple', metadata: { ns: 'a' } },
          { id: 'a2', embedding: NEAR, text: 'tenant pear', metadata: { ns: 'a' } },
          { id: 'b1', embedding: SAME, text: 'tenant apple', metadata: { ns: 'b' } },
        ],
      });
      t.same(ok.json(), { upserted: 3 });
      const missing = await app.inject({ method: 'POST', url: '/v1/collections/raw-tenant/query', headers: admin, payload: { query: QUERY } });
      assertError(t, missing, 400, /\bns\b/, 'query without the tenant');
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const text = mode === 'semantic' ? QUERY : 'tenant apple pear';
        t.same([...idsOf(await query('raw-tenant', { query: text, search_mode: mode, filters: { ns: 'a' } }))].sort(), ['a1', 'a2'], `${mode}: tenant a sees its own`);
        t.same(idsOf(await query('raw-tenant', { query: text, search_mode: mode, filters: { ns: 'b' } })), ['b1'], `${mode}: tenant b sees its own`);
      }
    });

    await t.test("an id of another tenant's vector: 409 naming the id, nothing written", async (t) => {
      await createCollection({ name: 'raw-tenant-ids', dimension: 4, tenant_field: 'tenant' });
      const globexVector = { id: 'x1', embedding: SAME, text: 'globex ledger', metadata: { tenant: 'globex' } };
      t.same((await upsert('raw-tenant-ids', { vectors: [globexVector] })).json(), { upserted: 1 });
      const before = await stats('raw-tenant-ids');
      const taken = await upsert('raw-tenant-ids', { vectors: [
        { id: 'acme-new', embedding: NEAR, text: 'acme ledger', metadata: { tenant: 'acme' } },
        { id: 'x1', embedding: FAR, text: 'acme ledger', metadata: { tenant: 'acme' } },
      ] });
      assertError(t, taken, 409, /^id "x1" names a vector of another tenant in collection raw-tenant-ids/, 'acme upserts over globex');
      t.notMatch(taken.json().detail, /globex/, "the detail does not reveal the other tenant's value");
      t.match(await stats('raw-tenant-ids'), { raw_vectors: before.raw_vectors, vectors: before.vectors, chunks: before.chunks }, 'nothing written');
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const text = mode === 'semantic' ? QUERY : 'ledger';
        t.same(idsOf(await query('raw-tenant-ids', { query: text, search_mode: mode, min_score: -1, filters: { tenant: 'acme' } })), [], `${mode}: acme has nothing`);
        const globex = await query('raw-tenant-ids', { query: text, search_mode: mode, min_score: -1, filters: { tenant: 'globex' } });
        t.same(globex.results.map((result) => [result.id, result.text, result.metadata]), [['x1', 'globex ledger', { tenant: 'globex' }]], `${mode}: globex keeps x1 as it was`);
      }
      t.same(idsOf(await query('raw-tenant-ids', { query: QUERY, search_mode: 'semantic', top_k: 1, filters: { tenant: 'globex' } })), ['x1'], "globex's vector is unchanged (SAME, not FAR)");
      const own = await upsert('raw-tenant-ids', { vectors: [{ ...globexVector, text: 'globex ledger revised' }] });
      t.same(own.json(), { upserted: 1 }, 'the same tenant still replaces its own id');
      t.same(idsOf(await query('raw-tenant-ids', { query: 'revised', search_mode: 'keyword', filters: { tenant: 'globex' } })), ['x1']);
    });

    await t.test('tenants 5 and "5" are one tenant: either replaces the vector, 6 gets a 409', async (t) => {
      await createCollection({ name: 'raw-typed-tenants', dimension: 4, tenant_field: 'tenant' });
      t.same((await upsert('raw-typed-tenants', { vectors: [{ id: 'n', embedding: SAME, text: 'numeric ledger', metadata: { tenant: 5 } }] })).json(), { upserted: 1 });
      t.same((await upsert('raw-typed-tenants', { vectors: [{ id: 'n', embedding: FAR, text: 'text ledger', metadata: { tenant: '5' } }] })).json(), { upserted: 1 }, 'the string "5" replaces the number 5\'s vector');
      assertError(t, await upsert('raw-typed-tenants', { vectors: [{ id: 'n', embedding: SAME, text: 'six ledger', metadata: { tenant: 6 } }] }), 409, /^id "n" names a vector of another tenant in collection raw-typed-tenants/, 'tenant 6');
      for (const tenant of [5, '5']) {
        const found = await query('raw-typed-tenants', { query: 'ledger', search_mode: 'keyword', filters: { tenant } });
        t.same(found.results.map((result) => [result.id, result.text, result.metadata]), [['n', 'text ledger', { tenant: '5' }]], `filter ${JSON.stringify(tenant)}: the replaced vector`);
      }
      t.same(idsOf(await query('raw-typed-tenants', { query: 'ledger', search_mode: 'keyword', filters: { tenant: 6 } })), [], 'tenant 6 has none');
    });

    await t.test('two tenants upserting one new id at the same time: one wins, the other gets 409', async (t) => {
      await createCollection({ name: 'raw-tenant-race', dimension: 4, tenant_field: 'tenant' });
      // Both requests read that the id is free before either writes it; only the write can tell.
      const [acme, globex] = await Promise.all(['acme', 'globex'].map((tenant) => upsert('raw-tenant-race', {
        vectors: [{ id: `${tenant}-own`, embedding: NEAR, text: `${tenant} register`, metadata: { tenant } }, { id: 'contested', embedding: SAME, text: `${tenant} ledger`, metadata: { tenant } }],
      })));
      const statuses = [acme!.statusCode, globex!.statusCode].sort();
      t.same(statuses, [200, 409], `one 200 and one 409 (${acme!.body} / ${globex!.body})`);
      const loser = acme!.statusCode === 409 ? 'acme' : 'globex';
      const winner = loser === 'acme' ? 'globex' : 'acme';
      assertError(t, loser === 'acme' ? acme! : globex!, 409, /^id "contested" names a vector of another tenant in collection raw-tenant-race/, 'the later write');
      const rows = await ctx.services.sql<{ id: string; tenant: string; text: string }>(
        'select c.id, c.tenant, c.text from chunks c join collections k on k.id = c.collection_id where k.name = ? order by c.id', ['raw-tenant-race'],
      );
      t.same(rows.map((row) => [row.id, row.tenant, row.text]), [[`${winner}-own`, winner, `${winner} register`], ['contested', winner, `${winner} ledger`]].sort(), "the winner's rows alone; the refused request wrote nothing");
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const text = mode === 'semantic' ? QUERY : 'ledger register';
        t.same(idsOf(await query('raw-tenant-race', { query: text, search_mode: mode, min_score: -1, filters: { tenant: loser } })), [], `${mode}: the refused tenant has nothing`);
        t.same(idsOf(await query('raw-tenant-race', { query: text, search_mode: mode, min_score: -1, filters: { tenant: winner } })).sort(), ['contested', `${winner}-own`].sort(), `${mode}: the winner has both`);
      }
      t.match(await stats('raw-tenant-race'), { raw_vectors: 2, vectors: 2, chunks: 2 });
    });

    await t.test('delete: 200 {deleted} counting existing ids; gone from every mode', async (t) => {
      const before = await stats('raw4');
      const response = await remove('raw4', { ids: ['same', 'missing', 'also-missing'] });
      t.equal(response.statusCode, 200, response.body);
      t.same(response.json(), { deleted: 1 });
      t.match(await stats('raw4'), { raw_vectors: before.raw_vectors - 1, vectors: before.vectors - 1, chunks: before.chunks - 1 });
      t.same(idsOf(await query('raw4', { query: QUERY, search_mode: 'semantic', min_score: -1 })), ['near', 'far'], 'semantic');
      t.same(idsOf(await query('raw4', { query: 'crimson orchard fruit', search_mode: 'keyword' })), [], 'keyword');
      t.notOk(idsOf(await query('raw4', { query: 'crimson orchard fruit', search_mode: 'hybrid', min_score: -1 })).includes('same'), 'hybrid');
      const cached = await app.inject({ method: 'POST', url: '/v1/collections/raw4/query', headers: admin, payload: { query: QUERY, search_mode: 'semantic' } });
      t.notOk(cached.json().results.some((result: any) => result.id === 'same'), 'a cached answer does not bring it back');
      t.same((await remove('raw4', { ids: ['same'] })).json(), { deleted: 0 }, 'deleting again counts nothing');
      t.same((await remove('raw4', { ids: ['near', 'near'] })).json(), { deleted: 1 }, 'a repeated id counts once');
      t.same(idsOf(await query('raw4', { query: QUERY, search_mode: 'semantic', min_score: -1 })), ['far']);
      assertError(t, await remove('raw4', { ids: [] }), 400, /ids/, 'no ids');
      assertError(t, await remove('raw4', {}), 400, /ids/, 'no ids field');
      assertError(t, await remove('raw4', { ids: [''] }), 400, undefined, 'empty id');
      assertError(t, await remove('raw4', { ids: ['far'], filter: { kind: 'weather' } }), 400, /filter/, 'unknown field beside ids');
      t.same(idsOf(await query('raw4', { query: QUERY, search_mode: 'semantic', min_score: -1 })), ['far'], 'the refused delete deleted nothing');
      assertError(t, await remove('missing-collection', { ids: ['x'] }), 404, undefined, 'unknown collection');
    });

    await t.test('document chunks are not raw vectors', async (t) => {
      const body = multipartUpload([{ filename: 'notes.txt', content: 'Quartz crystals grow in geodes.', contentType: 'text/plain' }]);
      const uploaded = await app.inject({ method: 'POST', url: '/v1/collections/raw4/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(uploaded.statusCode, 202);
      const documentId = uploaded.json().id;
      const [document] = (await waitForIngestion(app, 'raw4', admin)).filter((d) => d.id === documentId);
      t.equal(document?.status, 'ready', 'a 4-dimensional collection ingests documents with the local model');
      const chunks = (await app.inject({ url: `/v1/collections/raw4/documents/${documentId}/chunks`, headers: admin })).json();
      t.equal(chunks.total, 1);
      const chunkId = chunks.data[0].id;
      t.same((await remove('raw4', { ids: [chunkId] })).json(), { deleted: 0 }, 'vector delete does not remove a document chunk');
      const keyword = await query('raw4', { query: 'quartz geodes', search_mode: 'keyword' });
      t.same(keyword.results.map((result) => [result.id, result.document_id]), [[chunkId, documentId]], 'the chunk is still searchable');
      const hijack = await upsert('raw4', { vectors: [{ id: chunkId, embedding: SAME, text: 'hijacked text', metadata: {} }] });
      assertError(t, hijack, 409, new RegExp(chunkId), 'upserting over a document chunk id');
      const after = (await app.inject({ url: `/v1/collections/raw4/documents/${documentId}/chunks`, headers: admin })).json();
      t.equal(after.total, 1, "the document keeps its chunk");
      t.equal(after.data[0]?.text, 'Quartz crystals grow in geodes.', 'a raw upsert does not overwrite a document chunk');
      t.same(idsOf(await query('raw4', { query: 'quartz geodes', search_mode: 'keyword' })), [chunkId], 'the document chunk stays searchable by its text');
    });

    await t.test('ids, text and metadata with semicolons', async (t) => {
      await createCollection({ name: 'raw-semicolons', dimension: 4 });
      const response = await upsert('raw-semicolons', {
        vectors: [
          { id: 'plain', embedding: NEAR, text: 'ordinary sentence', metadata: {} },
          { id: 'semi;colon', embedding: SAME, text: 'first clause; second clause', metadata: { note: 'a;b' } },
        ],
      });
      t.equal(response.statusCode, 200, response.body.slice(0, 300));
      t.same(response.json(), { upserted: 2 });
      t.match(await stats('raw-semicolons'), { raw_vectors: 2, vectors: 2 });
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        // Semantic: the query text is embedded locally, so ask with QUERY, which SAME points at.
        const text = mode === 'semantic' ? `${QUERY};` : 'second clause; first';
        const answer = await app.inject({ method: 'POST', url: '/v1/collections/raw-semicolons/query', headers: admin, payload: { query: text, search_mode: mode } });
        t.equal(answer.statusCode, 200, `${mode}: ${answer.body.slice(0, 200)}`);
        if (answer.statusCode === 200) t.ok(idsOf(answer.json()).includes('semi;colon'), `${mode} finds it`);
      }
      const removed = await remove('raw-semicolons', { ids: ['semi;colon'] });
      t.equal(removed.statusCode, 200);
      t.same(removed.json(), { deleted: 1 });
      t.match(await stats('raw-semicolons'), { raw_vectors: 1, vectors: 1 });
    });

    await t.test('scopes and pins: vector:write and vector:delete are separate', async (t) => {
      const writer = bearer((await createApiKey(app, cookie, { name: 'writer', scopes: ['vector:write'] })).key);
      const deleter = bearer((await createApiKey(app, cookie, { name: 'deleter', scopes: ['vector:delete'] })).key);
      const collectionWriter = bearer((await createApiKey(app, cookie, { name: 'collection writer', scopes: ['collection:write', 'collection:delete'] })).key);
      const vector = { id: 'scoped', embedding: NEAR, text: 'scoped lemon', metadata: {} };
      const written = await upsert('raw4', { vectors: [vector] }, writer);
      t.equal(written.statusCode, 200, written.body);
      t.same(written.json(), { upserted: 1 });
      assertError(t, await remove('raw4', { ids: ['scoped'] }, writer), 403, 'API key missing required scope: vector:delete', 'writer deletes');
      assertError(t, await upsert('raw4', { vectors: [vector] }, deleter), 403, 'API key missing required scope: vector:write', 'deleter upserts');
      assertError(t, await upsert('raw4', { vectors: [vector] }, collectionWriter), 403, 'API key missing required scope: vector:write', 'collection:write does not grant vector upsert');
      assertError(t, await remove('raw4', { ids: ['scoped'] }, collectionWriter), 403, 'API key missing required scope: vector:delete', 'collection:delete does not grant vector delete');
      t.same(idsOf(await query('raw4', { query: 'scoped lemon', search_mode: 'keyword' })), ['scoped'], 'still there after the refusals');
      const deleted = await remove('raw4', { ids: ['scoped'] }, deleter);
      t.equal(deleted.statusCode, 200);
      t.same(deleted.json(), { deleted: 1 });
      const pinned = bearer((await createApiKey(app, cookie, { name: 'pinned', collection: 'raw384' })).key);
      assertError(t, await upsert('raw4', { vectors: [vector] }, pinned), 403, 'API key is pinned to collection raw384', 'pinned key, other collection');
      assertError(t, await remove('raw4', { ids: ['far'] }, pinned), 403, 'API key is pinned to collection raw384', 'pinned key deletes elsewhere');
      t.same((await upsert('raw384', { vectors: [{ ...vector, embedding: Array.from(hashedTextVector('scoped lemon', 384)) }] }, pinned)).json(), { upserted: 1 }, 'pinned key in its collection');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/raw4/vectors/upsert', payload: { vectors: [vector] } }), 401, undefined, 'no credentials');
    });
  });
}
