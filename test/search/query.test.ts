/**
 * Queries through the HTTP API (spec 2.6, 4.3; api-contract 3 and 5): response shape, the score of
 * each mode (cosine, BM25, scaled RRF), a fixture only hybrid gets right, fusion knobs, top_k and
 * min_score, collection defaults, filters in every mode, tenant isolation, the query cache,
 * multi-collection and batch queries, and bad input.
 *
 * Most fixtures are raw vectors (POST .../vectors/upsert): their text drives BM25 and their
 * embedding is built here around the query's own local embedding (the `local` embedder is
 * deterministic, so the test computes exactly what the service embeds the query as).
 */
import t, { type Test } from 'tap';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';
import { documentChunkId } from '../../src/documents/chunk-store.js';
import { Bm25Index } from '../../src/search/bm25.js';
import {
  adminTestApp, bearer, createApiKey, multipartUpload, testBackends, waitForIngestion,
} from '../support/test-app.js';

interface Result {
  id: string;
  document_id: string | null;
  document_filename: string | null;
  document_title: string | null;
  chunk_index: number;
  text: string;
  score: number;
  scores: { semantic?: number; keyword?: number };
  metadata: Record<string, any>;
  collection: string;
  collection_score?: number;
}
interface QueryAnswer {
  results: Result[];
  query: string;
  collection: string | null;
  total: number;
  search_mode?: string;
  timings: Record<string, number | boolean | undefined>;
}

/** What the service embeds a text as in a collection of `dimension` (same plugin, same config). */
async function localEmbedding(text: string, dimension: number): Promise<number[]> {
  const model = localEmbeddingPlugin.create({ dimension }, {});
  return Array.from((await model.embed([text], 'query')).vectors[0]!);
}

const dot = (a: readonly number[], b: readonly number[]) => a.reduce((sum, value, index) => sum + value * b[index]!, 0);
const norm = (a: readonly number[]) => Math.sqrt(dot(a, a));
const cosine = (a: readonly number[], b: readonly number[]) => dot(a, b) / (norm(a) * norm(b));

/** A unit vector orthogonal to the unit vector `q` (Gram-Schmidt on a fixed seed). */
function orthogonalTo(q: readonly number[], seed: readonly number[]): number[] {
  const projection = dot(seed, q);
  const rest = seed.map((value, index) => value - projection * q[index]!);
  const length = norm(rest);
  return rest.map((value) => value / length);
}

/** cos * q + sin * e: a vector whose cosine with `q` is exactly `cos` (q, e orthonormal). */
function atCosine(q: readonly number[], e: readonly number[], cos: number): number[] {
  const sin = Math.sqrt(1 - cos * cos);
  return q.map((value, index) => cos * value + sin * e[index]!);
}

/** Scaled RRF (api-contract 5): Σ w / (k + rank) over the lists holding the hit, / Σ w / (k + 1). */
function scaledRrf(ranks: Array<[weight: number, rank: number | null]>, k = 60): number {
  const maximum = ranks.reduce((sum, [weight]) => sum + weight / (k + 1), 0);
  return ranks.reduce((sum, [weight, rank]) => sum + (rank === null ? 0 : weight / (k + rank)), 0) / maximum;
}

const ids = (answer: QueryAnswer) => answer.results.map((result) => result.id);
const sortedIds = (answer: QueryAnswer) => ids(answer).sort();

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, cookie, admin } = ctx;

    async function request(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = admin) {
      return app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
    }
    async function ok(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, status = 200) {
      const response = await request(method, url, payload);
      if (response.statusCode !== status) throw new Error(`${method} ${url}: expected ${status}, got ${response.statusCode} ${response.body}`);
      return response.statusCode === 204 ? undefined : response.json();
    }
    const createCollection = (body: Record<string, unknown>) => ok('POST', '/v1/collections', body, 201);
    const upsert = (name: string, vectors: unknown[]) => ok('POST', `/v1/collections/${name}/vectors/upsert`, { vectors });
    const query = (name: string, body: Record<string, unknown>): Promise<QueryAnswer> => ok('POST', `/v1/collections/${name}/query`, body);
    /** 4xx with a `{detail: string}` body; returns the detail. */
    async function refused(t: Test, response: { statusCode: number; body: string; json(): any }, status: number, what: string): Promise<string> {
      t.equal(response.statusCode, status, `${what}: status ${status} (${response.body.slice(0, 200)})`);
      const body = response.json();
      t.type(body.detail, 'string', `${what}: detail is a string`);
      t.ok(String(body.detail).length > 0, `${what}: detail not empty`);
      t.notOk('results' in body, `${what}: no results`);
      return String(body.detail);
    }

    // ---------------------------------------------------------------------------------------
    // The hand-made fixture (dimension 8): query "quasar nebula".
    //   semantic order: S (cos 1), T (0.8), F1 (0.5), K (0.2), F2 (0.05); all positive, since the
    //   default min_score 0 drops negative cosines
    //   keyword order:  K (tf 2 of each term, short), T (tf 1, long); S, F1, F2 hold no term
    //   hybrid (k 60):  T = 2/62 beats K = 1/61 + 1/64 and S = 1/61
    // ---------------------------------------------------------------------------------------
    const QUERY = 'quasar nebula';
    // The fixture reasons with equal list weights; the local embedder's own defaults (6 : 1) are
    // checked separately below.
    const EQUAL = { keyword_weight: 1, semantic_weight: 1 };
    const DIM = 8;
    const q = await localEmbedding(QUERY, DIM);
    const e = orthogonalTo(q, [1, -2, 3, -4, 5, -6, 7, -8]);
    const fixture = [
      { id: 'S', cos: 1, text: 'gardening tips for spring tulips', metadata: { role: 'semantic' } },
      { id: 'T', cos: 0.8, text: 'a faint quasar near the nebula seen through amateur telescopes tonight', metadata: { role: 'target' } },
      { id: 'F1', cos: 0.5, text: 'cooking fresh pasta at home', metadata: { role: 'filler' } },
      { id: 'K', cos: 0.2, text: 'quasar nebula quasar nebula catalogue', metadata: { role: 'keyword' } },
      { id: 'F2', cos: 0.05, text: 'painting the kitchen walls white', metadata: { role: 'filler' } },
    ].map((item) => ({ ...item, embedding: atCosine(q, e, item.cos) }));
    const semanticOrder = ['S', 'T', 'F1', 'K', 'F2'];
    const keywordOrder = ['K', 'T'];
    const semanticRank = (id: string) => semanticOrder.indexOf(id) + 1;
    const keywordRank = (id: string) => (keywordOrder.includes(id) ? keywordOrder.indexOf(id) + 1 : null);
    const reference = new Bm25Index();
    for (const item of fixture) reference.add(item.id, item.text);
    const bm25 = new Map(reference.search(QUERY, 10).map((hit) => [hit.id, hit.score]));

    const vectorsOf = (items: typeof fixture) => items.map(({ id, embedding, text, metadata }) => ({ id, embedding, text, metadata }));
    await createCollection({ name: 'fixture', dimension: DIM });
    t.same(await upsert('fixture', vectorsOf(fixture)), { upserted: 5 });

    await t.test('the fixture is what the test assumes', async (t) => {
      // q is the embedder's float32 vector: unit length to ~1e-7, so cosines hold to about that.
      for (const item of fixture) t.ok(Math.abs(cosine(item.embedding, q) - item.cos) < 1e-6, `${item.id}: cos ${item.cos}`);
      t.same([...bm25.keys()], keywordOrder, 'reference BM25 ranks K before T, nothing else matches');
    });

    await t.test('response shape and per-stage timings', async (t) => {
      const shapes: Array<[string, string[], string[]]> = [
        ['semantic', ['embedding_ms', 'semantic_ms', 'fetch_ms', 'total_ms'], ['keyword_ms', 'fusion_ms']],
        ['keyword', ['keyword_ms', 'fetch_ms', 'total_ms'], ['embedding_ms', 'semantic_ms', 'fusion_ms']],
        ['hybrid', ['embedding_ms', 'semantic_ms', 'keyword_ms', 'fusion_ms', 'fetch_ms', 'total_ms'], []],
      ];
      for (const [mode, present, absent] of shapes) {
        const answer = await query('fixture', { query: QUERY, search_mode: mode, skip_cache: true });
        for (const field of ['results', 'query', 'collection', 'total', 'timings']) t.ok(field in answer, `${mode}: has ${field}`);
        t.equal(answer.query, QUERY, `${mode}: query echoed`);
        t.equal(answer.collection, 'fixture', `${mode}: collection named`);
        t.equal(answer.total, answer.results.length, `${mode}: total counts the results`);
        t.equal(answer.results.length, mode === 'keyword' ? 2 : 5, `${mode}: result count`);
        for (const field of present) {
          t.type(answer.timings[field], 'number', `${mode}: timings.${field} is a number`);
          t.ok((answer.timings[field] as number) >= 0, `${mode}: timings.${field} >= 0`);
        }
        for (const field of absent) t.notOk(field in answer.timings, `${mode}: no timings.${field}`);
        t.notOk(answer.timings.cached, `${mode}: skip_cache answers are not cached`);
        for (const result of answer.results) {
          t.same(Object.keys(result).sort(), ['chunk_index', 'collection', 'document_filename', 'document_id', 'document_title', 'id', 'metadata', 'score', 'scores', 'text'], `${mode}: ${result.id} fields`);
          const item = fixture.find((candidate) => candidate.id === result.id)!;
          t.equal(result.document_id, null, `${mode}: raw vector has no document`);
          t.equal(result.document_filename, null, `${mode}: nor a file name`);
          t.equal(result.document_title, null, `${mode}: nor a title`);
          t.equal(result.chunk_index, 0);
          t.equal(result.text, item.text, `${mode}: ${result.id} text`);
          t.same(result.metadata, item.metadata, `${mode}: ${result.id} metadata`);
          t.equal(result.collection, 'fixture');
        }
      }
    });

    await t.test('semantic score is the cosine similarity', async (t) => {
      const answer = await query('fixture', { query: QUERY, search_mode: 'semantic', top_k: 5 });
      t.same(ids(answer), semanticOrder);
      for (const result of answer.results) {
        const item = fixture.find((candidate) => candidate.id === result.id)!;
        // Float32 storage: a few ulps of single precision.
        t.ok(Math.abs(result.score - cosine(item.embedding, q)) < 1e-5, `${result.id}: score ${result.score} = cos ${item.cos}`);
        t.same(Object.keys(result.scores), ['semantic'], `${result.id}: only the semantic score`);
        t.equal(result.scores.semantic, result.score);
      }
    });

    await t.test('keyword score is BM25', async (t) => {
      const answer = await query('fixture', { query: QUERY, search_mode: 'keyword' });
      t.same(ids(answer), keywordOrder);
      for (const result of answer.results) {
        t.ok(result.score > 0, `${result.id}: BM25 > 0`);
        t.ok(Math.abs(result.score - bm25.get(result.id)!) < 1e-9, `${result.id}: ${result.score} equals the reference ${bm25.get(result.id)}`);
        t.same(result.scores, { keyword: result.score });
      }
      t.ok(answer.results[0]!.score > answer.results[1]!.score, 'descending');
    });

    await t.test('hybrid score is scaled RRF (k 60)', async (t) => {
      const answer = await query('fixture', { query: QUERY, search_mode: 'hybrid', top_k: 5, ...EQUAL });
      const expected = semanticOrder
        .map((id) => ({ id, score: scaledRrf([[1, semanticRank(id)], [1, keywordRank(id)]]) }))
        .sort((a, b) => b.score - a.score);
      t.same(ids(answer), expected.map((hit) => hit.id), 'fused order');
      t.same(ids(answer), ['T', 'K', 'S', 'F1', 'F2']);
      for (const [index, result] of answer.results.entries()) {
        t.ok(Math.abs(result.score - expected[index]!.score) < 1e-12, `${result.id}: ${result.score} = ${expected[index]!.score}`);
      }
      t.ok(Math.abs(answer.results[0]!.score - 61 / 62) < 1e-12, 'T: rank 2 in both lists = 61/62');
      const target = answer.results[0]!;
      t.ok(Math.abs(target.scores.semantic! - 0.8) < 1e-5, 'T carries its cosine');
      t.ok(Math.abs(target.scores.keyword! - bm25.get('T')!) < 1e-9, 'T carries its BM25');
      t.same(Object.keys(answer.results.find((result) => result.id === 'S')!.scores), ['semantic'], 'S is only in the semantic list');

      // Rank 1 in both lists: exactly 1.0. A filter leaves T alone in both lists.
      const alone = await query('fixture', { query: QUERY, search_mode: 'hybrid', filters: { role: 'target' } });
      t.same(ids(alone), ['T']);
      t.equal(alone.results[0]!.score, 1, 'rank 1 in both lists scores exactly 1.0');
    });

    await t.test('only hybrid finds the target at top_k 1', async (t) => {
      const top = async (mode: string) => ids(await query('fixture', { query: QUERY, search_mode: mode, top_k: 1, ...EQUAL }));
      t.same(await top('keyword'), ['K'], 'keyword alone: the keyword distractor');
      t.same(await top('semantic'), ['S'], 'semantic alone: the semantic distractor');
      t.same(await top('hybrid'), ['T'], 'hybrid: the target');
    });

    await t.test('rrf_k, keyword_weight and semantic_weight move the hybrid order', async (t) => {
      const hybrid = (extra: Record<string, unknown>) => query('fixture', { query: QUERY, search_mode: 'hybrid', top_k: 5, ...EQUAL, ...extra });
      // k = 1: rank 1 counts far more than rank 2, so K (1st and 4th) beats T (2nd and 2nd).
      const smallK = await hybrid({ rrf_k: 1 });
      t.same(ids(smallK).slice(0, 3), ['K', 'T', 'S']);
      t.ok(Math.abs(smallK.results[0]!.score - scaledRrf([[1, 4], [1, 1]], 1)) < 1e-12, 'K at k 1: (1/5 + 1/2) / 1 = 0.7');
      t.ok(Math.abs(smallK.results[0]!.score - 0.7) < 1e-12);

      const keywordOnly = await hybrid({ semantic_weight: 0 });
      t.same(ids(keywordOnly), keywordOrder, 'semantic_weight 0: exactly the keyword order; the weightless list adds nobody');
      t.equal(keywordOnly.results[0]!.score, 1, 'keyword rank 1 alone is 1.0 when the other list weighs 0');

      const semanticOnly = await hybrid({ keyword_weight: 0 });
      t.same(ids(semanticOnly), semanticOrder, 'keyword_weight 0: the semantic order');
      t.equal(semanticOnly.results[0]!.score, 1);

      const keywordHeavy = await hybrid({ keyword_weight: 3 });
      t.same(ids(keywordHeavy).slice(0, 2), ['K', 'T'], 'keyword_weight 3: K first');
      t.ok(Math.abs(keywordHeavy.results[0]!.score - scaledRrf([[1, 4], [3, 1]])) < 1e-12);

      // S (1st, absent) beats T (2nd, 2nd) only when w_s / w_k > 61: 100/61 > 101/62.
      const semanticHeavy = await hybrid({ semantic_weight: 100 });
      t.same(ids(semanticHeavy).slice(0, 2), ['S', 'T'], 'semantic_weight 100: S first');
      t.ok(Math.abs(semanticHeavy.results[0]!.score - scaledRrf([[100, 1], [1, null]])) < 1e-12);
      const semanticHeavier = await hybrid({ semantic_weight: 60 });
      t.same(ids(semanticHeavier).slice(0, 2), ['T', 'S'], 'semantic_weight 60: T still first');

      const defaults = await hybrid({ rrf_k: 60, keyword_weight: 1, semantic_weight: 1 });
      t.same(ids(defaults), ['T', 'K', 'S', 'F1', 'F2'], 'explicit defaults give the default order');
    });

    await t.test('top_k and min_score', async (t) => {
      t.same(ids(await query('fixture', { query: QUERY, search_mode: 'semantic', top_k: 2 })), ['S', 'T']);
      t.same(ids(await query('fixture', { query: QUERY, search_mode: 'semantic', top_k: 1000 })), semanticOrder, 'top_k above the collection size');

      const semantic = await query('fixture', { query: QUERY, search_mode: 'semantic', min_score: 0.45 });
      t.same(ids(semantic), ['S', 'T', 'F1'], 'semantic: cosine below 0.45 dropped');
      t.equal(semantic.total, 3, 'total counts what is returned');

      const keyword = await query('fixture', { query: QUERY, search_mode: 'keyword', min_score: (bm25.get('K')! + bm25.get('T')!) / 2 });
      t.same(ids(keyword), ['K'], 'keyword: BM25 below the threshold dropped');
      t.equal(keyword.total, 1);

      const hybrid = await query('fixture', { query: QUERY, search_mode: 'hybrid', min_score: 0.9, ...EQUAL });
      t.same(ids(hybrid), ['T', 'K'], 'hybrid: scaled RRF below 0.9 dropped (S is 0.5)');
      t.equal(hybrid.total, 2);

      const none = await query('fixture', { query: QUERY, search_mode: 'semantic', min_score: 1.5 });
      t.same(none.results, []);
      t.equal(none.total, 0);

      const limited = await query('fixture', { query: QUERY, search_mode: 'semantic', min_score: 0.45, top_k: 2 });
      t.same(ids(limited), ['S', 'T'], 'top_k applies after min_score');
      t.equal(limited.total, 2);

      for (const mode of ['semantic', 'keyword', 'hybrid'] as const) {
        const body = { query: QUERY, search_mode: mode, skip_cache: true, ...(mode === 'hybrid' ? EQUAL : {}) };
        const all = await query('fixture', body);
        const second = all.results[1]!;
        const atScore = await query('fixture', { ...body, min_score: second.score });
        t.same(ids(atScore), ids(all).slice(0, 2), `${mode}: a score equal to min_score passes (${second.score})`);
      }
    });

    await t.test('collection defaults apply when the request omits them', async (t) => {
      await createCollection({ name: 'defaults', dimension: DIM, default_top_k: 2, default_search_mode: 'keyword', default_min_score: 0 });
      await upsert('defaults', vectorsOf(fixture));
      let answer = await query('defaults', { query: QUERY });
      t.same(ids(answer), ['K', 'T'], 'default_search_mode keyword');
      t.same(answer.results[0]!.scores, { keyword: answer.results[0]!.score });
      t.equal(answer.search_mode, 'keyword');

      await ok('PATCH', '/v1/collections/defaults', { default_search_mode: 'semantic', default_top_k: 3 });
      answer = await query('defaults', { query: QUERY });
      t.same(ids(answer), ['S', 'T', 'F1'], 'updated defaults: semantic, top 3 (no stale cache)');

      await ok('PATCH', '/v1/collections/defaults', { default_min_score: 0.6 });
      answer = await query('defaults', { query: QUERY });
      t.same(ids(answer), ['S', 'T'], 'default_min_score 0.6');
      answer = await query('defaults', { query: QUERY, min_score: 0 });
      t.same(ids(answer), ['S', 'T', 'F1'], 'the request overrides default_min_score');
      answer = await query('defaults', { query: QUERY, search_mode: 'hybrid', top_k: 1, min_score: 0, ...EQUAL });
      t.same(ids(answer), ['T'], 'the request overrides mode and top_k');

      // Contract defaults: hybrid, top 10; the local embedder's fusion weights keyword 6 : semantic 1.
      answer = await query('fixture', { query: QUERY });
      t.equal(answer.search_mode, 'hybrid');
      t.same(ids(answer), ['K', 'T', 'S', 'F1', 'F2'], 'fixture default: hybrid, top 10 (all five), keyword-heavy');
      t.ok(Math.abs(answer.results[0]!.score - scaledRrf([[6, 1], [1, 4]])) < 1e-12, 'K: (6/61 + 1/64) / (7/61)');
    });

    await t.test('results of uploaded documents', async (t) => {
      await createCollection({ name: 'docs' });
      const upload = multipartUpload(
        [{ filename: 'orbits.txt', content: 'Planetary orbits are ellipses with the sun at one focus.', contentType: 'text/plain' }],
        { metadata: JSON.stringify({ source: 'upload', dept: { name: 'astro' } }) },
      );
      const uploaded = await app.inject({ method: 'POST', url: '/v1/collections/docs/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
      t.equal(uploaded.statusCode, 202, uploaded.body);
      const documentId = uploaded.json().id as string;
      const documents = await waitForIngestion(app, 'docs', admin);
      t.same(documents.map((document) => document.status), ['ready']);

      const text = 'Planetary orbits are ellipses with the sun at one focus.';
      const semantic = await query('docs', { query: 'elliptical planet orbit', search_mode: 'semantic' });
      t.equal(semantic.results.length, 1);
      const [hit] = semantic.results;
      t.equal(hit!.id, documentChunkId(documentId, 0));
      t.match(hit!.id, /^[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a chunk id is a UUID (api-contract 1)');
      t.equal(hit!.document_id, documentId);
      t.equal(hit!.document_filename, 'orbits.txt', 'the document\'s file name, to cite it');
      t.equal(hit!.document_title, null, 'a text file states no title');
      t.equal(hit!.chunk_index, 0);
      t.equal(hit!.text, text);
      t.equal(hit!.collection, 'docs');
      t.same(hit!.metadata, { source: 'upload', dept: { name: 'astro' }, heading_path: [], element_types: ['paragraph'] }, 'upload metadata on the chunk');
      const expected = cosine(await localEmbedding('elliptical planet orbit', 384), await localEmbedding(text, 384));
      t.ok(Math.abs(hit!.score - expected) < 1e-5, `cosine of the local embeddings: ${hit!.score} vs ${expected}`);

      const filtered = await query('docs', { query: 'orbits', search_mode: 'keyword', filters: { 'dept.name': 'astro' } });
      t.same(ids(filtered), [documentChunkId(documentId, 0)], 'upload metadata is filterable');

      const titled = multipartUpload([{ filename: 'laws/kepler.md', content: '---\ntitle: Kepler\'s laws\n---\n# Orbits\n\nEach planet sweeps equal areas in equal times.', contentType: 'text/markdown' }]);
      t.equal((await app.inject({ method: 'POST', url: '/v1/collections/docs/documents', headers: { ...admin, ...titled.headers }, payload: titled.payload })).statusCode, 202);
      await waitForIngestion(app, 'docs', admin);
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const [found] = (await query('docs', { query: 'planet sweeps equal areas', search_mode: mode, top_k: 1 })).results;
        t.match(found, { document_filename: 'kepler.md', document_title: 'Kepler\'s laws' }, `${mode}: a result names its document's file and title`);
      }
      const across = await app.inject({ method: 'POST', url: '/v1/query', headers: admin, payload: { query: 'planet sweeps equal areas', collections: ['docs'], top_k: 1 } });
      t.match(across.json().results[0], { document_filename: 'kepler.md', document_title: 'Kepler\'s laws' }, 'so does a result of /v1/query');
    });

    // PGlite regression: MikroORM inlines SQL parameters, and a ";" inside a value made PGlite's
    // knex dialect answer through its multi-statement path (nested row lists): chunk keys became
    // NaN, upserts and uploads answered 500, and the collection's keyword search stayed broken.
    await t.test('texts, filenames and metadata holding ";"', async (t) => {
      await createCollection({ name: 'semicolons', chunk_size: 200, chunk_overlap: 0 });
      const text = 'first clause; second clause; and a third';
      t.same(await upsert('semicolons', [{ id: 'raw;1', text, embedding: await localEmbedding(text, 384), metadata: { note: 'a;b' } }]), { upserted: 1 });
      const long = Array.from({ length: 6 }, (_, index) => `Paragraph ${index}; it holds semicolons; several of them, about tidepools.`).join('\n\n');
      const upload = multipartUpload([{ filename: 'notes;v2.txt', content: long, contentType: 'text/plain' }], { metadata: JSON.stringify({ note: 'x;y' }) });
      const uploaded = await app.inject({ method: 'POST', url: '/v1/collections/semicolons/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
      t.equal(uploaded.statusCode, 202, uploaded.body);
      t.equal(uploaded.json().filename, 'notes;v2.txt');
      t.same(uploaded.json().metadata, { note: 'x;y' });
      const [document] = await waitForIngestion(app, 'semicolons', admin);
      t.equal(document!.status, 'ready', `ingested (${document!.error})`);
      t.ok(document!.chunk_count > 1, 'several chunks');

      const raw = await query('semicolons', { query: 'clause', search_mode: 'keyword', filters: { note: 'a;b' } });
      t.same(ids(raw), ['raw;1']);
      t.equal(raw.results[0]!.text, text);
      const chunks = await query('semicolons', { query: 'tidepools; semicolons', search_mode: 'hybrid', top_k: 50, filters: { note: 'x;y' } });
      t.equal(chunks.results.length, document!.chunk_count, 'every chunk of the document found');
      t.ok(chunks.results.every((result) => result.document_id === document!.id && result.text.includes(';')));
    });

    // ---------------------------------------------------------------------------------------
    // Filters: five raw vectors all holding "widget"; each filter's expected ids by hand.
    // ---------------------------------------------------------------------------------------
    await t.test('filters in every mode', async (t) => {
      await createCollection({ name: 'filtered', dimension: DIM });
      const widgets: Array<[string, Record<string, unknown>]> = [
        ['a', { kind: 'memo', year: 2019, score: 1.5, tags: ['x', 'y'], author: { name: 'Ada', team: 'core' } }],
        ['b', { kind: 'report', year: 2020, score: 3, tags: ['y'], author: { name: 'Grace', team: 'ml' } }],
        ['c', { kind: 'report', year: 2021, archived: null, author: { name: 'Ada', team: 'ml' } }],
        ['d', { kind: 'note', year: 2022, score: 10, tags: [], 'file.name': 'd.txt', $and: 'literal' }],
        ['e', { kind: 'memo', year: '2021', author: { name: 'Edsger' }, file: { name: 'e.txt' } }],
      ];
      await upsert('filtered', widgets.map(([id, metadata], index) => ({
        id, metadata, text: `widget ${['alpha', 'bravo', 'charlie', 'delta', 'echo'][index]} report`,
        embedding: atCosine(q, e, 0.9 - index * 0.2),
      })));
      const cases: Array<[string, Record<string, unknown>, string[]]> = [
        ['equality shorthand', { kind: 'report' }, ['b', 'c']],
        ['$eq', { kind: { $eq: 'memo' } }, ['a', 'e']],
        ['$ne', { kind: { $ne: 'memo' } }, ['b', 'c', 'd']],
        ['$gt', { year: { $gt: 2020 } }, ['c', 'd']],
        ['$gte', { year: { $gte: 2020 } }, ['b', 'c', 'd']],
        ['$lt', { year: { $lt: 2020 } }, ['a']],
        ['$lte', { year: { $lte: 2020 } }, ['a', 'b']],
        ['$in', { kind: { $in: ['note', 'report'] } }, ['b', 'c', 'd']],
        ['$nin', { kind: { $nin: ['note', 'report'] } }, ['a', 'e']],
        ['$exists true (explicit null)', { archived: { $exists: true } }, ['c']],
        ['$exists false', { score: { $exists: false } }, ['c', 'e']],
        ['$and', { $and: [{ kind: 'report' }, { year: { $gte: 2021 } }] }, ['c']],
        ['$or', { $or: [{ kind: 'note' }, { 'author.name': 'Grace' }] }, ['b', 'd']],
        ['$not', { $not: { kind: 'memo' } }, ['b', 'c', 'd']],
        ['dotted path', { 'author.team': 'ml' }, ['b', 'c']],
        ['array element equality', { tags: 'y' }, ['a', 'b']],
        ['two fields ANDed', { kind: 'memo', 'author.name': 'Ada' }, ['a']],
        ['string year is not a number', { year: { $eq: '2021' } }, ['e']],
        ['a key with a dot, escaped', { 'file\\.name': 'd.txt' }, ['d']],
        ['the dotted path beside it', { 'file.name': { $exists: true } }, ['e']],
        ['a key starting with $, escaped', { '\\$and': 'literal' }, ['d']],
      ];
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const unfiltered = await query('filtered', { query: 'widget', search_mode: mode, top_k: 50, min_score: -1 });
        t.same(sortedIds(unfiltered), ['a', 'b', 'c', 'd', 'e'], `${mode}: no filter, every widget`);
        for (const [what, filters, expected] of cases) {
          const answer = await query('filtered', { query: 'widget', search_mode: mode, top_k: 50, min_score: -1, filters });
          t.same(sortedIds(answer), expected, `${mode}: ${what}`);
        }
        const unknown = await request('POST', '/v1/collections/filtered/query', { query: 'widget', search_mode: mode, filters: { kind: { $regex: 'me.*' } } });
        const detail = await refused(t, unknown, 400, `${mode}: unknown operator`);
        t.match(detail, /\$regex/, `${mode}: the detail names the operator`);
        const unknownCombinator = await request('POST', '/v1/collections/filtered/query', { query: 'widget', search_mode: mode, filters: { $nor: [{ kind: 'memo' }] } });
        await refused(t, unknownCombinator, 400, `${mode}: unknown combinator`);
      }
    });

    // ---------------------------------------------------------------------------------------
    // Tenants: a holds apples, b holds bananas (and, later, apples too).
    // ---------------------------------------------------------------------------------------
    await t.test('tenant isolation', async (t) => {
      await createCollection({ name: 'tenants', dimension: DIM, tenant_field: 'tenant' });
      const aItems = [
        { id: 'a1', text: 'apple orchard harvest', cos: 0.3 },
        { id: 'a2', text: 'apple pie recipe with cinnamon apple slices', cos: 0.2 },
        { id: 'a3', text: 'orchard ladder safety', cos: 0.1 },
      ];
      const bItems = [
        { id: 'b1', text: 'banana zebra smoothie', cos: 0.95 },
        { id: 'b2', text: 'zebra crossing banana', cos: 0.9 },
      ];
      await upsert('tenants', [
        ...aItems.map((item) => ({ id: item.id, text: item.text, embedding: atCosine(q, e, item.cos), metadata: { tenant: 'a' } })),
        ...bItems.map((item) => ({ id: item.id, text: item.text, embedding: atCosine(q, e, item.cos), metadata: { tenant: 'b' } })),
      ]);
      const aIds = aItems.map((item) => item.id);

      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        for (const filters of [undefined, {}, { other: 'a' }, { tenant: '' }, { tenant: { $in: ['a'] } }]) {
          const response = await request('POST', '/v1/collections/tenants/query', { query: 'apple', search_mode: mode, ...(filters === undefined ? {} : { filters }) });
          const detail = await refused(t, response, 400, `${mode}: filters ${JSON.stringify(filters)}`);
          t.match(detail, /filters\.tenant\b/, `${mode}: the detail names the tenant field`);
        }
        const objectTenant = await request('POST', '/v1/collections/tenants/vectors/upsert', { vectors: [{ id: 'odd', text: 'apple', embedding: atCosine(q, e, 0.5), metadata: { tenant: { id: 'a' } } }] });
        t.match(await refused(t, objectTenant, 400, `${mode}: upsert with an object for the tenant`), /metadata\.tenant must be a non-empty string, a number or a boolean, the tenant; it is an object$/);
        const form = multipartUpload([{ filename: 'odd.txt', content: 'apple', contentType: 'text/plain' }], { metadata: '{"tenant":""}' });
        const emptyTenant = await app.inject({ method: 'POST', url: '/v1/collections/tenants/documents', headers: { ...admin, ...form.headers }, payload: form.payload });
        t.equal(await refused(t, emptyTenant, 400, `${mode}: upload with an empty tenant`), 'metadata.tenant must be a non-empty string, a number or a boolean, the tenant; it is an empty string');
        for (const [value, kind] of [['', 'an empty string'], [null, 'null'], [{ $eq: '' }, 'an empty string']] as const) {
          const response = await request('POST', '/v1/collections/tenants/query', { query: 'apple', search_mode: mode, filters: { tenant: value } });
          t.equal(await refused(t, response, 400, `${mode}: tenant ${JSON.stringify(value)}`), `filters.tenant must be a non-empty string, a number or a boolean, the tenant; it is ${kind}`, 'says what is wrong with it, not that it is missing');
        }
        const bOnly = await query('tenants', { query: 'banana zebra', search_mode: mode, min_score: -1, filters: { tenant: 'a' } });
        t.ok(bOnly.results.every((result) => aIds.includes(result.id) && result.metadata.tenant === 'a'), `${mode}: b's text, tenant a: no b result`);
        if (mode === 'keyword') t.same(bOnly.results, [], 'keyword: a query matching only b is empty for a');
        else t.same(sortedIds(bOnly), aIds, `${mode}: only a's vectors, though b's are nearer`);
        const eqForm = await query('tenants', { query: 'apple', search_mode: mode, min_score: -1, filters: { tenant: { $eq: 'a' } } });
        t.ok(eqForm.results.length > 0 && eqForm.results.every((result) => aIds.includes(result.id)), `${mode}: {$eq: tenant} form accepted`);
        const bAnswer = await query('tenants', { query: 'banana zebra', search_mode: mode, min_score: -1, filters: { tenant: 'b' } });
        t.same(sortedIds(bAnswer), ['b1', 'b2'], `${mode}: tenant b sees its own`);
        const nobody = await query('tenants', { query: 'apple', search_mode: mode, min_score: -1, filters: { tenant: 'c' } });
        t.same(nobody.results, [], `${mode}: an unknown tenant sees nothing`);
      }

      const keywordA = async () => (await query('tenants', { query: 'apple orchard', search_mode: 'keyword', filters: { tenant: 'a' }, skip_cache: true }))
        .results.map((result) => ({ id: result.id, score: result.score }));
      const before = await keywordA();
      t.same(before.map((hit) => hit.id).sort(), ['a1', 'a2', 'a3'], 'a: every apple or orchard chunk');
      // The reference BM25 over tenant a's corpus alone.
      const tenantA = new Bm25Index();
      for (const item of aItems) tenantA.add(item.id, item.text);
      for (const hit of before) {
        const expected = tenantA.search('apple orchard', 10).find((candidate) => candidate.id === hit.id)!.score;
        t.ok(Math.abs(hit.score - expected) < 1e-9, `${hit.id}: BM25 over tenant a's statistics only (${hit.score} vs ${expected})`);
      }

      await upsert('tenants', Array.from({ length: 40 }, (_, index) => ({
        id: `b-apple-${index}`, text: `apple apple orchard number ${index}`, embedding: atCosine(q, e, 0.5), metadata: { tenant: 'b' },
      })));
      t.same(await keywordA(), before, 'forty apple chunks of b leave a\'s keyword scores unchanged, bit for bit');
      const hybridA = await query('tenants', { query: 'apple orchard', search_mode: 'hybrid', filters: { tenant: 'a' }, top_k: 50 });
      t.same(sortedIds(hybridA), ['a1', 'a2', 'a3'], 'hybrid: still only a');
    });

    // ---------------------------------------------------------------------------------------
    // The query cache.
    // ---------------------------------------------------------------------------------------
    await t.test('cache: repeated answers, skip_cache, invalidation by writes', async (t) => {
      await createCollection({ name: 'cached' });
      const vector = async (id: string, text: string) => ({ id, text, embedding: await localEmbedding(text, 384), metadata: {} });
      await upsert('cached', [await vector('v1', 'lighthouse keeper stories')]);
      const ask = (extra: Record<string, unknown> = {}) => query('cached', { query: 'lighthouse', search_mode: 'keyword', ...extra });

      const first = await ask();
      t.same(ids(first), ['v1']);
      t.notOk(first.timings.cached, 'first answer computed');
      const second = await ask();
      t.equal(second.timings.cached, true, 'repeat answered from the cache');
      t.same(Object.keys(second.timings).sort(), ['cached', 'total_ms'], 'no stage ran, so none is timed (the first run\'s stages exceeded this total)');
      t.same(second.results, first.results, 'same results');
      const skipped = await ask({ skip_cache: true });
      t.notOk(skipped.timings.cached, 'skip_cache computes');
      t.same(skipped.results, first.results);
      const otherMode = await ask({ search_mode: 'hybrid' });
      t.notOk(otherMode.timings.cached, 'a different request is a different entry');

      await upsert('cached', [await vector('v2', 'lighthouse beacon lighthouse')]);
      const afterUpsert = await ask();
      t.notOk(afterUpsert.timings.cached, 'upsert invalidates');
      t.same(ids(afterUpsert).sort(), ['v1', 'v2'], 'the upserted vector is visible at once');

      await upsert('cached', [await vector('v2', 'harbour beacon')]);
      t.same(ids(await ask()), ['v1'], 'a replaced text is visible at once');

      t.same(await ok('POST', '/v1/collections/cached/vectors/delete', { ids: ['v1'] }), { deleted: 1 });
      const afterDelete = await ask();
      t.notOk(afterDelete.timings.cached, 'delete invalidates');
      t.same(ids(afterDelete), [], 'the deleted vector is gone at once');
      t.equal((await ask()).timings.cached, true, 'and the new answer is cached in turn');

      const upload = multipartUpload([{ filename: 'light.txt', content: 'The lighthouse was automated in 1990.', contentType: 'text/plain' }]);
      const uploaded = await app.inject({ method: 'POST', url: '/v1/collections/cached/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
      t.equal(uploaded.statusCode, 202, uploaded.body);
      const documentId = uploaded.json().id as string;
      await waitForIngestion(app, 'cached', admin);
      const afterUpload = await ask();
      t.notOk(afterUpload.timings.cached, 'ingestion invalidates');
      t.same(ids(afterUpload), [documentChunkId(documentId, 0)], 'the uploaded document is found');

      await ok('DELETE', `/v1/collections/cached/documents/${documentId}`, undefined, 204);
      const afterDocumentDelete = await ask();
      t.notOk(afterDocumentDelete.timings.cached, 'document delete invalidates');
      t.same(ids(afterDocumentDelete), [], 'the deleted document is gone at once');
    });

    // ---------------------------------------------------------------------------------------
    // Several collections in one request.
    // ---------------------------------------------------------------------------------------
    await t.test('/v1/query across collections', async (t) => {
      const fill = async (name: string, texts: Record<string, string>) => {
        await createCollection({ name });
        await upsert(name, await Promise.all(Object.entries(texts).map(async ([id, text]) => ({ id, text, embedding: await localEmbedding(text, 384) }))));
      };
      await fill('multi_a', { a1: 'quasar quasar observation log', a2: 'a quasar seen once among many other bright objects', a3: 'nothing relevant here' });
      await fill('multi_b', { b1: 'quasar jets quasar', b2: 'the quasar and the long list of other galaxies', b3: 'knitting patterns' });
      const single = async (name: string) => query(name, { query: 'quasar', search_mode: 'keyword' });
      const aAnswer = await single('multi_a');
      const bAnswer = await single('multi_b');
      t.same(ids(aAnswer), ['a1', 'a2']);
      t.same(ids(bAnswer), ['b1', 'b2']);

      const answer: QueryAnswer = await ok('POST', '/v1/query', { query: 'quasar', collections: ['multi_a', 'multi_b'], search_mode: 'keyword' });
      t.equal(answer.query, 'quasar');
      t.equal(answer.total, 4);
      t.same(answer.results.map((result) => `${result.collection}/${result.id}`).sort(), ['multi_a/a1', 'multi_a/a2', 'multi_b/b1', 'multi_b/b2'], 'results name their collection');
      t.same(answer.results.slice(0, 2).map((result) => result.id).sort(), ['a1', 'b1'], 'fused by rank: both rank-1 hits first');
      t.same(answer.results.slice(2).map((result) => result.id).sort(), ['a2', 'b2'], 'then both rank-2 hits');
      t.equal(answer.results[0]!.score, answer.results[1]!.score, 'equal ranks, equal fused scores');
      t.equal(answer.results[0]!.score, 1, 'rank 1 of a collection scores 1.0, as in a query of one collection');
      t.ok(answer.results[1]!.score > answer.results[2]!.score, 'rank 1 above rank 2');
      for (const result of answer.results) {
        const own = (result.collection === 'multi_a' ? aAnswer : bAnswer).results.find((candidate) => candidate.id === result.id)!;
        t.equal(result.collection_score, own.score, `${result.id}: its collection's own score kept`);
        t.equal(result.text, own.text);
      }
      const topOne: QueryAnswer = await ok('POST', '/v1/query', { query: 'quasar', collections: ['multi_a', 'multi_b'], search_mode: 'keyword', top_k: 1 });
      t.equal(topOne.results.length, 1, 'top_k bounds the fused list');
      await ok('PATCH', '/v1/collections/multi_a', { default_top_k: 3 });
      await ok('PATCH', '/v1/collections/multi_b', { default_top_k: 2 });
      const byDefaults: QueryAnswer = await ok('POST', '/v1/query', { query: 'quasar', collections: ['multi_a', 'multi_b'], search_mode: 'keyword' });
      t.equal(byDefaults.results.length, 3, 'without top_k, the largest default_top_k of the collections');
      await ok('PATCH', '/v1/collections/multi_a', { default_top_k: 10 });
      await ok('PATCH', '/v1/collections/multi_b', { default_top_k: 10 });

      const pinned = await createApiKey(app, cookie, { name: 'pinned to a', collection: 'multi_a' });
      const crossing = await request('POST', '/v1/query', { query: 'quasar', collections: ['multi_a', 'multi_b'] }, bearer(pinned.key));
      t.equal(await refused(t, crossing, 403, 'pinned key across collections'), 'API key is pinned to collection multi_a');
      const own = await request('POST', '/v1/query', { query: 'quasar', collections: ['multi_a'], search_mode: 'keyword' }, bearer(pinned.key));
      t.equal(own.statusCode, 200, 'a pinned key may query its own collection');
      t.same(own.json().results.map((result: Result) => result.id), ['a1', 'a2']);

      const unknown = await request('POST', '/v1/query', { query: 'quasar', collections: ['multi_a', 'no_such_collection'] });
      t.match(await refused(t, unknown, 404, 'unknown collection'), /no_such_collection/);
      // A name no collection can have is not looked up: a NUL character made the lookup fail, a 503.
      for (const name of ['multi\u0000a', 'multi a', 'multi_a!']) {
        const impossible = await request('POST', '/v1/query', { query: 'quasar', collections: ['multi_a', name] });
        t.equal(await refused(t, impossible, 404, `collection ${JSON.stringify(name)}`), `Collection ${name} not found`);
      }
    });

    await t.test('/v1/batch/query', async (t) => {
      const response = await request('POST', '/v1/batch/query', {
        queries: [
          { collection: 'fixture', query: QUERY, search_mode: 'keyword' },
          { collection: 'no_such_collection', query: 'anything' },
          { collection: 'tenants', query: 'apple' },
          { collection: 'tenants', query: 'apple', search_mode: 'keyword', filters: { tenant: 'a' } },
          { collection: 'fixture', query: QUERY, search_mode: 'semantic', top_k: 1 },
          { collection: 'fix\u0000ture', query: QUERY },
        ],
      });
      t.equal(response.statusCode, 200, response.body);
      const { results } = response.json() as { results: Array<Record<string, any>> };
      t.equal(results.length, 6, 'one entry per item');
      t.same(results.map((item) => [item.collection, item.query]), [
        ['fixture', QUERY], ['no_such_collection', 'anything'], ['tenants', 'apple'], ['tenants', 'apple'], ['fixture', QUERY], ['fix\u0000ture', QUERY],
      ], 'in order');
      t.same(results[0]!.results.map((result: Result) => result.id), keywordOrder);
      t.equal(results[0]!.total, 2);
      t.type(results[0]!.timings.total_ms, 'number');
      t.notOk('error' in results[0]!);
      t.equal(results[1]!.error.status, 404, 'unknown collection: item error 404');
      t.type(results[1]!.error.detail, 'string');
      t.notOk('results' in results[1]!);
      t.equal(results[2]!.error.status, 400, 'tenant-less item: item error 400');
      t.match(results[2]!.error.detail, /filters\.tenant\b/);
      t.same(results[3]!.results.map((result: Result) => result.id).sort(), ['a1', 'a2'], 'tenant item with its filter: only a');
      t.same(results[4]!.results.map((result: Result) => result.id), ['S']);
      t.same(results[5]!.error, { status: 404, detail: 'Collection fix\u0000ture not found' }, 'a name no collection can have (a NUL): item error 404, the other items answered');
    });

    await t.test('bad input: 400 with a detail, nothing changed', async (t) => {
      const analytics = async () => (await ok('GET', '/v1/collections/fixture/analytics')).queries_total as number;
      const baseline = await query('fixture', { query: QUERY, search_mode: 'hybrid', skip_cache: true });
      const queriesBefore = await analytics();
      const bodies: Array<[string, unknown]> = [
        ['unknown search_mode', { query: QUERY, search_mode: 'fuzzy' }],
        ['top_k 0', { query: QUERY, top_k: 0 }],
        ['top_k 10000', { query: QUERY, top_k: 10000 }],
        ['top_k not an integer', { query: QUERY, top_k: 2.5 }],
        ['empty query', { query: '' }],
        ['whitespace-only query', { query: '   \t\n ' }],
        ['missing query', { top_k: 3 }],
        ['query not a string', { query: 42 }],
        ['filters a string', { query: QUERY, filters: 'role' }],
        ['filters an array', { query: QUERY, filters: [{ role: 'target' }] }],
        ['unknown filter operator', { query: QUERY, filters: { role: { $like: 'tar%' } } }],
        ['filter value an object without operators', { query: QUERY, filters: { role: { name: 'x' } } }],
        ['$in without an array', { query: QUERY, filters: { role: { $in: 'target' } } }],
        ['unknown field', { query: QUERY, colour: 'red' }],
        ['min_score a string', { query: QUERY, min_score: '0.5' }],
        ['rrf_k 0', { query: QUERY, rrf_k: 0 }],
        ['negative keyword_weight', { query: QUERY, keyword_weight: -1 }],
        ['hybrid with both weights 0', { query: QUERY, search_mode: 'hybrid', keyword_weight: 0, semantic_weight: 0 }],
        ['an operator beside a field key', { query: QUERY, filters: { role: { $eq: 'target', name: 'x' } } }],
        ['query over 10,000 characters', { query: 'quasar '.repeat(1500) }],
      ];
      for (const [what, body] of bodies) {
        await refused(t, await request('POST', '/v1/collections/fixture/query', body), 400, `collection query: ${what}`);
      }
      // 1e400 is valid JSON that JSON.parse reads as infinity: it needs the raw text.
      const infiniteBound = await app.inject({ method: 'POST', url: '/v1/collections/fixture/query', headers: { ...admin, 'content-type': 'application/json' }, payload: `{"query":"${QUERY}","filters":{"rank":{"$gt":1e400}}}` });
      t.match(await refused(t, infiniteBound, 400, 'an infinite filter bound'), /^Operator "\$gt" on field "rank" needs a finite number/);
      const unknownMode = await request('POST', '/v1/collections/fixture/query', { query: QUERY, search_mode: 'fuzzy' });
      t.match(unknownMode.json(), {
        detail: 'body.search_mode must be one of "semantic", "keyword", "hybrid"',
        errors: [{ keyword: 'enum', params: { allowedValues: ['semantic', 'keyword', 'hybrid'] } }],
      }, 'an unknown search_mode is said once, with the values it takes');
      t.equal(unknownMode.json().errors.length, 1, 'one error, not one per mode and one for their union');
      const detailOf = async (url: string, body: unknown) => (await request('POST', url, body)).json().detail as string;
      t.equal(await detailOf('/v1/collections/fixture/query', { query: '' }), 'body.query must not be empty', 'an empty query is said in words');
      t.equal(await detailOf('/v1/collections/fixture/query', { query: ' \t ' }), 'body.query must not be blank', 'so is a blank one, not as a pattern');
      t.equal(await detailOf('/v1/collections/fixture/query', { query: 'quasar '.repeat(1500) }), 'body.query must be at most 10000 characters long');
      t.equal(await detailOf('/v1/query', { query: QUERY, collections: [] }), 'body.collections must list at least one item');
      const mixed = await refused(t, await request('POST', '/v1/collections/fixture/query', { query: QUERY, filters: { role: { $eq: 'target', name: 'x' } } }), 400, 'operator beside a field key');
      t.match(mixed, /^Filter value of field "role" has the key "name", which is not an operator/, 'the detail names the key');
      const multi: Array<[string, unknown]> = [
        ['collections []', { query: QUERY, collections: [] }],
        ['collections missing', { query: QUERY }],
        ['empty query', { query: '', collections: ['fixture'] }],
        ['whitespace-only query', { query: '  ', collections: ['fixture'] }],
        ['unknown search_mode', { query: QUERY, collections: ['fixture'], search_mode: 'fuzzy' }],
        ['top_k 0', { query: QUERY, collections: ['fixture'], top_k: 0 }],
        ['unknown filter operator', { query: QUERY, collections: ['fixture'], filters: { role: { $foo: 1 } } }],
      ];
      for (const [what, body] of multi) await refused(t, await request('POST', '/v1/query', body), 400, `/v1/query: ${what}`);
      const batch: Array<[string, unknown]> = [
        ['queries []', { queries: [] }],
        ['item with top_k 10000', { queries: [{ collection: 'fixture', query: QUERY, top_k: 10000 }] }],
        ['item with an empty query', { queries: [{ collection: 'fixture', query: ' ' }] }],
      ];
      for (const [what, body] of batch) await refused(t, await request('POST', '/v1/batch/query', body), 400, `/v1/batch/query: ${what}`);
      // Unknown fields are named, at the top of a body as in its items (a field of another API would be dropped unread).
      const unknownFields: Array<[string, unknown, string]> = [
        ['/v1/query', { query: QUERY, collections: ['fixture'], namespace: 'fixture' }, 'body has unknown field "namespace"'],
        ['/v1/batch/query', { queries: [{ collection: 'fixture', query: QUERY }], parallel: true }, 'body has unknown field "parallel"'],
        ['/v1/batch/query', { queries: [{ collection: 'fixture', query: QUERY, namespace: 'fixture' }] }, 'body.queries.0 has unknown field "namespace"'],
      ];
      for (const [url, body, detail] of unknownFields) t.equal(await refused(t, await request('POST', url, body), 400, `${url}: unknown field`), detail);

      t.equal(await analytics(), queriesBefore, 'no refused query was recorded');
      const after = await query('fixture', { query: QUERY, search_mode: 'hybrid', skip_cache: true });
      t.same(after.results, baseline.results, 'the collection answers as before');
      t.same((await ok('GET', '/v1/collections/fixture/stats')).chunks, 5, 'no chunk added or removed');
    });
  });
}
