/**
 * Reranking (spec 2.6 `rerank`, 2.3 `reranking_enabled` / `reranking_model`, api-contract 3):
 * the built-in `local` reranker and the Cohere, Voyage and self-hosted (TEI, Jina) rerankers,
 * through queries over the HTTP API. First-stage fixtures are raw vectors searched by keyword, so
 * the candidate lists are known exactly.
 */
import t from 'tap';
import { localRelevanceScores, localRerankScores } from '../../plugins/reranker/local/index.js';
import { assertError } from '../support/assertions.js';
import { fakeRelevance, startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, setupAdmin, testBackends } from '../support/test-app.js';
import { providerApi } from '../providers/provider-api.js';

const KEY = 'rr-test-RERANK-key-5555';
const DIMENSION = 8;
const QUERY = 'solar panel installation guide';
/**
 * BM25 prefers the text repeating the query's words; a reader (and the reranker) prefers the text
 * saying exactly this, and reads three more texts (barns, roofs, renters) as better than the
 * repetition, which is what it takes to move a candidate above the first stage's first.
 */
const TEXTS: Record<string, string> = {
  stuffed: 'guide guide guide installation installation installation panel panel panel solar solar solar',
  scattered: 'a guide for roofs: the installation takes a day, and each solar array has one panel per row',
  exact: 'the solar panel installation guide for small homes',
  barns: 'solar panel installation for barns',
  roofs: 'solar panel installation on flat roofs',
  renters: 'panel installation guide for renters',
  partial: 'panel discussion about guide dogs',
  noise: 'garden tools and spring tulips',
};

/**
 * The user probe's case: among README chunks about semver, the one documenting `satisfies` is the
 * answer and the first stage ranks it first. Weighed over the 30 candidates alone, "semver",
 * "version" and "range" are in nearly all of them and weigh nothing, and the path-type chunk, the
 * one candidate saying "check whether", reads best: a reranker that trusted that reading alone
 * (this one until the probe) put it first.
 */
const DISTINCTIVE_QUERY = 'check whether a version satisfies a semver range';
const DISTINCTIVE_TEXTS: Record<string, string> = {
  semver: 'semver, the semantic versioner for npm. satisfies(version, range): return true if the version satisfies the range.',
  'path-type': 'isFile(path): check whether the passed path is a file. isDirectory(path): check whether the passed path is a directory.',
  ...Object.fromEntries(Array.from({ length: 28 }, (_, index) => [`semver-${index}`, `helper${index}(version, range) in semver: one more helper for a version and a range.`])),
  // Notes make "check" and "whether" common words of the collection, as they are in real READMEs.
  ...Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`note-${index}`, `note ${index}: ${index % 2 === 0 ? 'check' : 'whether'} the settings before release ${index}.`])),
};

const vector = (seed: number) => Array.from({ length: DIMENSION }, (_, index) => Math.sin(seed * 7 + index));

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend, { providerTimeoutMs: 1000, providerMaxRetries: 1 });
    t.teardown(() => ctx.close());
    const cookie = await setupAdmin(ctx.app);
    const api = providerApi(ctx.app, { cookie });

    const makeCollection = async (name: string, extra: Record<string, unknown> = {}, texts = TEXTS) => {
      await api.createCollection({ name, dimension: DIMENSION, default_search_mode: 'keyword', ...extra });
      await api.ok('POST', `/v1/collections/${name}/vectors/upsert`, {
        vectors: Object.entries(texts).map(([id, text], index) => ({ id, text, embedding: vector(index + 1) })),
      });
    };
    const ids = (answer: { results: Array<{ id: string }> }) => answer.results.map((result) => result.id);

    await makeCollection('plain');
    const firstStage = await api.query('plain', { query: QUERY, top_k: 10 });

    await t.test('rerank: true reorders by the local reranker and keeps top_k', async (t) => {
      t.equal(ids(firstStage)[0], 'stuffed', 'BM25 alone ranks the repeated words first');
      t.notOk('rerank_ms' in firstStage.timings, 'no rerank stage unless asked');
      const scores = localRerankScores(QUERY, firstStage.results.map((result: { id: string; text: string }) => ({ id: result.id, text: result.text })));
      const expected = firstStage.results.map((result: { id: string }, index: number) => ({ id: result.id, score: scores[index]! }))
        .sort((a: { score: number }, b: { score: number }) => b.score - a.score);
      const reranked = await api.query('plain', { query: QUERY, top_k: 3, rerank: true });
      t.same(ids(reranked), expected.slice(0, 3).map((item: { id: string }) => item.id));
      t.equal(ids(reranked)[0], 'exact', 'the text saying exactly the query comes first');
      t.notSame(ids(reranked), ids(firstStage).slice(0, 3), 'the order changed');
      t.equal(reranked.total, 3);
      for (const result of reranked.results) {
        t.equal(result.score, result.scores.rerank, 'score is the reranker score');
        t.type(result.scores.keyword, 'number', 'the first-stage score is kept beside it');
      }
      t.type(reranked.timings.rerank_ms, 'number');
      const again = await api.query('plain', { query: QUERY, top_k: 3, rerank: true });
      t.same(ids(again), ids(reranked), 'deterministic');
    });

    await t.test('min_score applies to the score returned, the reranker\'s', async (t) => {
      const reranked = await api.query('plain', { query: QUERY, top_k: 5, rerank: true });
      const scores = reranked.results.map((result: { score: number }) => result.score);
      t.ok(scores[1] > scores[2], `the second and third reranked scores differ (${scores.join(', ')})`);
      const floor = (scores[1] + scores[2]) / 2;
      const floored = await api.query('plain', { query: QUERY, top_k: 5, rerank: true, min_score: floor });
      t.same(ids(floored), ids(reranked).slice(0, 2), 'the two results scored above the floor, no more');
      t.ok(floored.results.every((result: { score: number }) => result.score >= floor));
      const firstStageScores = firstStage.results.map((result: { score: number }) => result.score);
      t.ok(firstStageScores.filter((score: number) => score >= floor).length > 2, 'a floor on the first stage would have kept more');
      const unreachable = await api.query('plain', { query: QUERY, top_k: 5, rerank: true, min_score: Math.max(...scores) + 1 });
      t.same(unreachable.results, [], 'a floor above every reranked score keeps nothing');
      const fused = await api.ok('POST', '/v1/query', { collections: ['plain'], query: QUERY, top_k: 5, rerank: true, min_score: floor });
      t.same(ids(fused), ids(reranked).slice(0, 2), '/v1/query applies it to collection_score, the reranked score');
      const batch = await api.ok('POST', '/v1/batch/query', { queries: [{ collection: 'plain', query: QUERY, top_k: 5, rerank: true, min_score: floor }] });
      t.same(ids(batch.results[0]), ids(reranked).slice(0, 2), 'so does a batch item');
      await makeCollection('floored', { reranking_enabled: true, default_min_score: floor });
      const byDefault = await api.query('floored', { query: QUERY, top_k: 5 });
      t.ok(byDefault.results.length > 0 && byDefault.results.every((result: { score: number }) => result.score >= floor), 'default_min_score is a floor on the reranked scores');
      t.ok(byDefault.results.length < (await api.query('floored', { query: QUERY, top_k: 5, min_score: -1 })).results.length, 'and it drops some');
    });

    await t.test('candidates beyond top_k are read: the best may come from further down', async (t) => {
      const position = ids(firstStage).indexOf('exact');
      t.ok(position >= 1, `first stage puts it at ${position + 1}`);
      const answer = await api.query('plain', { query: QUERY, top_k: 1, rerank: true });
      t.same(ids(answer), ['exact']);
    });

    await t.test('the probe\'s semver question: the first stage\'s answer stays first', async (t) => {
      await makeCollection('distinctive', {}, DISTINCTIVE_TEXTS);
      const candidates = ids(await api.query('distinctive', { query: DISTINCTIVE_QUERY, top_k: 30 }));
      t.same(candidates.slice(0, 2), ['semver', 'path-type'], 'the first stage ranks the answer first, the path-type chunk second');
      t.equal(candidates.filter((id) => id.startsWith('semver')).length, 29, 'nearly every candidate says semver, version and range');
      const reranked = await api.query('distinctive', { query: DISTINCTIVE_QUERY, top_k: 3, rerank: true });
      t.equal(ids(reranked)[0], 'semver');
    });

    await t.test('reranking_enabled makes reranking the default; rerank: false turns it off', async (t) => {
      await makeCollection('enabled', { reranking_enabled: true });
      const byDefault = await api.query('enabled', { query: QUERY, top_k: 2 });
      t.equal(ids(byDefault)[0], 'exact');
      t.type(byDefault.timings.rerank_ms, 'number');
      const off = await api.query('enabled', { query: QUERY, top_k: 2, rerank: false });
      t.same(ids(off), ids(firstStage).slice(0, 2));
      t.notOk('rerank_ms' in off.timings);
      const semantic = await api.query('enabled', { query: QUERY, top_k: 2, search_mode: 'hybrid' });
      t.equal(semantic.results.length, 2, 'hybrid results are reranked too');
      const batch = await api.ok('POST', '/v1/batch/query', { queries: [{ collection: 'plain', query: QUERY, top_k: 1, rerank: true }] });
      t.same(ids(batch.results[0]), ['exact'], 'batch items take rerank');
    });

    const remotes: Array<{ model: string; base: string; route: Parameters<typeof fake.requestsTo>[0]; body(body: any): void; key: boolean }> = [
      { model: 'cohere/rerank-v3.5', base: fake.baseUrl('cohere'), route: 'cohere-rerank', key: true, body: (body) => t.match(body, { model: 'rerank-v3.5', query: QUERY, top_n: body.documents.length }) },
      { model: 'voyage/rerank-2.5', base: fake.baseUrl('voyage'), route: 'voyage-rerank', key: true, body: (body) => t.match(body, { model: 'rerank-2.5', query: QUERY, top_k: body.documents.length }) },
      { model: 'openai_compatible/BAAI/bge-reranker-base', base: fake.baseUrl('tei'), route: 'tei-rerank', key: false, body: (body) => t.match(body, { query: QUERY, texts: body.documents }) },
      { model: 'openai_compatible/jina-reranker-v2-base-multilingual', base: fake.baseUrl('jina'), route: 'jina-rerank', key: true, body: (body) => t.match(body, { model: 'jina-reranker-v2-base-multilingual', query: QUERY }) },
    ];
    for (const remote of remotes) {
      await t.test(`${remote.model}: the provider's scores order the results`, async (t) => {
        const name = `remote-${remote.route}`;
        await makeCollection(name, { reranking_enabled: true, reranking_model: remote.model, reranking_base_url: remote.base, ...(remote.key ? { reranking_api_key: KEY } : {}) });
        fake.reset();
        const answer = await api.query(name, { query: QUERY, top_k: 3 });
        const [call] = fake.requestsTo(remote.route);
        t.ok(call, 'the reranker was called');
        remote.body(call!.body);
        t.equal(call!.authorization, remote.key ? `Bearer ${KEY}` : undefined);
        const documents: string[] = call!.body.documents;
        t.equal(documents.length, firstStage.results.length, 'every first-stage candidate is sent');
        const expected = documents.map((text) => ({ text, score: fakeRelevance(QUERY, text) })).sort((a, b) => b.score - a.score).slice(0, 3);
        t.same(answer.results.map((result: { text: string }) => result.text), expected.map((item) => item.text));
        t.same(answer.results.map((result: { score: number }) => result.score), expected.map((item) => item.score));
      });
    }

    await t.test('a reranker failure is a 502 with its message, never its key', async (t) => {
      const wrongKey = 'rr-WRONG-key-do-not-echo';
      await makeCollection('bad-reranker', { reranking_enabled: true, reranking_model: 'cohere/rerank-v3.5', reranking_base_url: fake.baseUrl('cohere'), reranking_api_key: wrongKey });
      const answer = await api.send('POST', '/v1/collections/bad-reranker/query', { query: QUERY });
      assertError(t, answer, 502, 'cohere answered 401: invalid api token [redacted]');
      t.notMatch(answer.body, wrongKey);
      fake.failNext('voyage-rerank', { malformed: true });
      await api.ok('PATCH', '/v1/collections/bad-reranker', { reranking_model: 'voyage/rerank-2.5', reranking_base_url: fake.baseUrl('voyage'), reranking_api_key: KEY });
      assertError(t, await api.send('POST', '/v1/collections/bad-reranker/query', { query: QUERY }), 502, 'voyage answered with a body that is not JSON');
      t.equal((await api.send('POST', '/v1/collections/bad-reranker/query', { query: QUERY, rerank: false })).statusCode, 200, 'still queryable without reranking');
    });

    await t.test('scores a reranker answers for no candidate, or not as numbers, are a 502 naming them', async (t) => {
      await makeCollection('tei-faults', { reranking_enabled: true, reranking_model: 'openai_compatible/bge', reranking_base_url: fake.baseUrl('tei') });
      fake.reset();
      t.equal((await api.send('POST', '/v1/collections/tei-faults/query', { query: QUERY })).statusCode, 200);
      const candidates = fake.requestsTo('tei-rerank')[0]!.body.texts.length as number;
      t.ok(candidates > 2, `${candidates} candidates`);
      const faults: Array<[unknown, string]> = [
        [[{ index: -1, score: 0.5 }], 'openai_compatible answered with a score for no candidate (index -1)'],
        [[{ index: 0.5, score: 0.5 }], 'openai_compatible answered with a score for no candidate (index 0.5)'],
        [[{ index: 0, score: 0.5 }, { index: 1, score: 0.25 }, { index: candidates, score: 0.1 }], `openai_compatible answered with a score for no candidate (index ${candidates})`],
        [[{ index: 0, score: '0.5' }], 'openai_compatible answered a score that is not a finite number for candidate 0: "0.5"'],
        [[{ index: 1, score: null }], 'openai_compatible answered a score that is not a finite number for candidate 1: null'],
        [[{ index: 2, score: { value: 'x'.repeat(500) } }], `openai_compatible answered a score that is not a finite number for candidate 2: ${JSON.stringify({ value: 'x'.repeat(500) }).slice(0, 100)}`],
        [[{ index: 0, score: 0.5 }], 'openai_compatible left some candidates without a score'],
      ];
      for (const [body, detail] of faults) {
        fake.failNext('tei-rerank', { status: 200, body });
        assertError(t, await api.send('POST', '/v1/collections/tei-faults/query', { query: QUERY, skip_cache: true }), 502, detail, JSON.stringify(body));
      }
      t.equal((await api.send('POST', '/v1/collections/tei-faults/query', { query: QUERY, skip_cache: true })).statusCode, 200, 'the next answer, whole, reranks');
    });

    await t.test('reranking_model must be local or <provider>/<model>; refused updates change nothing', async (t) => {
      const before = await api.ok('GET', '/v1/collections/plain');
      const refused: Array<[Record<string, unknown>, RegExp]> = [
        [{ reranking_model: 'acme/reranker' }, /reranking_model must be "local" or "<provider>\/<model>"/],
        [{ reranking_model: 'cohere' }, /reranking_model must be/],
        [{ reranking_model: 'cohere/' }, /reranking_model must be/],
        [{ reranking_model: 'openai_compatible/bge' }, /reranking_base_url is required/],
        [{ reranking_model: 'cohere/rerank-v3.5' }, /reranking_api_key is required for reranking_model cohere\/rerank-v3.5/],
        [{ reranking_model: 'voyage/rerank-2.5', reranking_api_key: null }, /reranking_api_key is required for reranking_model voyage\/rerank-2.5/],
      ];
      for (const [body, detail] of refused) {
        assertError(t, await api.send('PATCH', '/v1/collections/plain', body), 400, detail, JSON.stringify(body));
        assertError(t, await api.send('POST', '/v1/collections', { name: 'refused-reranker', ...body }), 400, detail, `create ${JSON.stringify(body)}`);
      }
      t.same(await api.ok('GET', '/v1/collections/plain'), before, 'unchanged');
      assertError(t, await api.send('GET', '/v1/collections/refused-reranker'), 404, undefined, 'not created');
      const accepted = await api.ok('PATCH', '/v1/collections/plain', { reranking_model: 'openai_compatible/bge', reranking_base_url: fake.baseUrl('tei') });
      t.match(accepted, { reranking_model: 'openai_compatible/bge', reranking_base_url: fake.baseUrl('tei') });
      await api.ok('PATCH', '/v1/collections/plain', { reranking_model: null, reranking_base_url: null });
      t.same(ids(await api.query('plain', { query: QUERY, top_k: 1, rerank: true })), ['exact'], 'no model means local');
    });

    await t.test('a hosted reranker keeps its key: removing it is refused, the model and key can change together', async (t) => {
      await makeCollection('keyed-reranker', { reranking_enabled: true, reranking_model: 'cohere/rerank-v3.5', reranking_base_url: fake.baseUrl('cohere'), reranking_api_key: KEY });
      const before = await api.ok('GET', '/v1/collections/keyed-reranker');
      assertError(t, await api.send('PATCH', '/v1/collections/keyed-reranker', { reranking_api_key: null }), 400, /reranking_api_key is required for reranking_model cohere\/rerank-v3.5/);
      t.same(await api.ok('GET', '/v1/collections/keyed-reranker'), before, 'the key stays');
      t.equal((await api.send('POST', '/v1/collections/keyed-reranker/query', { query: QUERY })).statusCode, 200, 'still reranks with its key');
      // The stored key was sent wherever an update pointed the reranker, and keys cannot be read back.
      const moves: Array<[Record<string, unknown>, RegExp]> = [
        [{ reranking_base_url: 'http://127.0.0.1:9/v2' }, /^reranking_api_key is required with a new reranking_base_url: the stored key is never sent to another host/],
        [{ reranking_model: 'voyage/rerank-2.5' }, /^reranking_api_key is required with a new reranking provider/],
        [{ reranking_model: 'openai_compatible/bge', reranking_base_url: fake.baseUrl('tei') }, /^reranking_api_key is required with a new reranking_base_url/],
      ];
      for (const [body, detail] of moves) {
        assertError(t, await api.send('PATCH', '/v1/collections/keyed-reranker', body), 400, detail, JSON.stringify(body));
      }
      t.same(await api.ok('GET', '/v1/collections/keyed-reranker'), before, 'nothing changed');
      t.match(await api.ok('PATCH', '/v1/collections/keyed-reranker', { reranking_model: 'cohere/rerank-english-v3.0' }), { reranking_model: 'cohere/rerank-english-v3.0' }, 'another model of the same provider keeps the key');
      const local = await api.ok('PATCH', '/v1/collections/keyed-reranker', { reranking_model: 'openai_compatible/bge', reranking_base_url: fake.baseUrl('tei'), reranking_api_key: null });
      t.match(local, { reranking_model: 'openai_compatible/bge', has_reranking_api_key: false }, 'a self-hosted reranker needs no key');
      t.match(await api.ok('PATCH', '/v1/collections/keyed-reranker', { description: 'other fields update as before' }), { description: 'other fields update as before' });
    });
  });
}

/**
 * The local reranker's reading of one candidate (0.5 × BM25 share + 0.3 × proximity + 0.2 × query
 * order). Its effect through the API is an order fused with the first stage's, where a feature
 * read wrongly can still leave the order of a fixture as it was; here each feature is read alone.
 * A term held once in a text of the average length has a BM25 share of 1 / (1 + k1) = 1 / 2.2.
 */
t.test('local relevance: term weight, proximity and query order, each as documented', async (t) => {
  const scores = (query: string, ...texts: string[]) => localRelevanceScores(query, texts.map((text, index) => ({ id: String(index), text })));
  t.same(scores('apple', 'apple'), [0.727273], 'a one-term query held: proximity 1 and order 1 (0.5 / 2.2 + 0.3 + 0.2)');
  t.same(scores('red apple', 'red apple'), [0.727273], 'both terms, adjacent and in the query\'s order');
  t.same(scores('red apple', 'apple red'), [0.527273], 'adjacent in the other order: the order share (0.2) is lost');
  t.same(scores('red apple', 'fat apple big red', 'big fat apple red'), [0.427273, 0.527273], 'a span of 3 for 2 terms reads 2/3 of the proximity of adjacent terms (0.3 × 1/3 less)');
  t.same(scores('red apple', 'pear', 'apple'), [0, 0.250574], 'no query term reads 0; one of two, half the proximity and no order');
});
