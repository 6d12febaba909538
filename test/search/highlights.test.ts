/**
 * Highlights: which words of a text match a query as BM25 matches them (highlightSpans), and
 * `highlight: true` through the HTTP API on both backends, in every mode and query form, with
 * context windows, and bad input.
 */
import t from 'tap';
import { highlightSpans, highlightTerms } from '../../src/search/highlights.js';
import { adminTestApp, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';
import { jsonRequests } from '../support/json-requests.js';

/** The highlighted words of `text` for `query`. */
const marked = (text: string, query: string) => highlightSpans(text, highlightTerms(query)).map(({ start, end }) => text.slice(start, end));

t.test('highlightSpans marks what BM25 counts as the query\'s terms', async (t) => {
  t.same(marked('The runner runs; running shoes ran out.', 'running'), ['runs', 'running'], 'Porter stems: runs and running are run; runner and ran are not');
  t.same(marked('The Tower of London', 'the tower'), ['Tower'], 'stop words mark nothing; case is ignored');
  t.same(marked('Un café à Paris, the CAFE in Rome', 'cafe'), ['café', 'CAFE'], 'accents folded, offsets on the original text');
  t.same(marked('İstanbul and istanbul', 'istanbul'), ['İstanbul', 'istanbul'], 'a letter that lowercases to two code units keeps its offsets');
  t.same(marked('e-mail, email', 'mail'), ['mail'], 'a hyphen cuts words, as the analyzer cuts them');
  t.same(marked('nothing here', 'the of'), [], 'a query of stop words marks nothing');
  t.same(marked('東京都に行く', '東京'), ['東京'], 'Chinese and Japanese: the matching bigram, not the whole phrase');
  t.same(marked('東京都に行く', '東京都'), ['東京都'], 'overlapping bigrams are one span');
  t.same(marked('서울은 크다', '서울'), ['서울'], 'Korean: the word without its particle');
  t.same(marked('東京2020大会', '2020'), ['2020'], 'digits inside a bigram run are a piece of their own');
  const text = 'Alpha beta alpha.';
  t.same(highlightSpans(text, highlightTerms('alpha')), [{ start: 0, end: 5 }, { start: 11, end: 16 }], 'offsets, end exclusive');
});

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    const { request, ok } = jsonRequests(app, admin);
    type Span = { start: number; end: number };
    type Result = { text: string; highlights?: Span[]; context?: { text: string; highlights?: Span[] } | null };
    const words = (text: string, spans: Span[] = []) => spans.map(({ start, end }) => text.slice(start, end));

    await ok('POST', '/v1/collections', { name: 'marked', chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' });
    const form = multipartUpload([{
      filename: 'ships.txt',
      contentType: 'text/plain',
      content: 'Sailing ships sailed the oceans for centuries.\n\nA ship\'s sail catches the wind; sailors trim the sails.\n\nSteam engines replaced most sailing vessels.',
    }]);
    const uploaded = await app.inject({ method: 'POST', url: '/v1/collections/marked/documents', headers: { ...admin, ...form.headers }, payload: form.payload });
    t.equal(uploaded.statusCode, 202, uploaded.body);
    await waitForIngestion(app, 'marked', admin);

    await t.test('each result says where its text holds the query\'s terms, in every mode', async (t) => {
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const answer = await ok<{ results: Result[] }>('POST', '/v1/collections/marked/query', { query: 'sailing ships', search_mode: mode, highlight: true, min_score: -1 });
        const first = answer.results.find((result) => result.text.startsWith('Sailing ships'))!;
        t.same(words(first.text, first.highlights), ['Sailing', 'ships', 'sailed'], `${mode}: stems of sail and ship`);
        const second = answer.results.find((result) => result.text.startsWith('A ship'))!;
        t.same(words(second.text, second.highlights), ['ship', 'sail', 'sails'], `${mode}: not "sailors" (another stem) nor "s"`);
      }
    });

    await t.test('no highlights unless asked for', async (t) => {
      for (const body of [{ query: 'ships' }, { query: 'ships', highlight: false }]) {
        const answer = await ok<{ results: Result[] }>('POST', '/v1/collections/marked/query', body);
        t.ok(answer.results.length > 0 && answer.results.every((result) => !('highlights' in result)), JSON.stringify(body));
      }
    });

    await t.test('a context window is highlighted too', async (t) => {
      const answer = await ok<{ results: Result[] }>('POST', '/v1/collections/marked/query', { query: 'steam', search_mode: 'keyword', highlight: true, context_window: 1, top_k: 1 });
      const [hit] = answer.results;
      t.same(words(hit!.text, hit!.highlights), ['Steam']);
      t.same(words(hit!.context!.text, hit!.context!.highlights), ['Steam'], 'the window\'s own offsets');
      t.ok(hit!.context!.text.length > hit!.text.length, 'the window is longer than the result');
    });

    await t.test('every query form takes it', async (t) => {
      const across = await ok<{ results: Result[] }>('POST', '/v1/query', { query: 'wind', collections: ['marked'], search_mode: 'keyword', highlight: true });
      t.same(words(across.results[0]!.text, across.results[0]!.highlights), ['wind'], '/v1/query');
      const batch = await ok<{ results: Array<{ results: Result[] }> }>('POST', '/v1/batch/query', { queries: [{ collection: 'marked', query: 'wind', search_mode: 'keyword', highlight: true }] });
      const item = batch.results[0]!.results[0]!;
      t.same(words(item.text, item.highlights), ['wind'], '/v1/batch/query');
    });

    await t.test('bad input is a 400 naming the field', async (t) => {
      for (const value of ['yes', 1, null]) {
        const response = await request('POST', '/v1/collections/marked/query', { query: 'ships', highlight: value });
        assertError(t, response, 400, /highlight/, `${JSON.stringify(value)}: the detail names the field;`);
      }
    });
  });
}
