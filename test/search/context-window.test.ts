/**
 * `context_window` through the HTTP API, on both backends: each result carries its chunk with its
 * document's neighbouring chunks as one text, their overlap written once; the window stops at the
 * document's ends; a one-chunk document's window is that chunk; raw vectors get null; every query
 * form; chunks written before their offsets were stored; bad input.
 */
import t, { type Test } from 'tap';
import { MAX_CONTEXT_WINDOW } from '../../src/search/context-window.js';
import { adminTestApp, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';
import { jsonRequests } from '../support/json-requests.js';

interface Context { text: string; first_chunk_index: number; last_chunk_index: number }
interface Result { id: string; document_id: string | null; chunk_index: number; text: string; context?: Context | null }
interface QueryAnswer { results: Result[]; timings: Record<string, number | boolean | undefined> }

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
/** Eight paragraphs, each naming its own word: a chunk each at 120 characters, with a 40-character overlap. */
const PARAGRAPHS = WORDS.map((word, index) =>
  `Paragraph ${index + 1} is about ${word}. It says a little more about ${word} here, and then a closing sentence ends it.`);
/** The document text chunk offsets refer to: the text parser's paragraphs, joined by a blank line. */
const DOCUMENT = PARAGRAPHS.join('\n\n');

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    const { request, ok } = jsonRequests(app, admin);

    const query = (body: Record<string, unknown>) => ok<QueryAnswer>('POST', '/v1/collections/windows/query', { search_mode: 'keyword', ...body });
    async function refused(t: Test, body: Record<string, unknown>, what: string) {
      assertError(t, await request('POST', '/v1/collections/windows/query', { query: 'alpha', ...body }), 400, /context_window/, `${what}: the detail names the field;`);
    }

    await ok('POST', '/v1/collections', { name: 'windows', chunk_size: 120, chunk_overlap: 40, chunk_strategy: 'recursive' });
    const uploaded = await uploadDocument(app, admin, 'windows', { filename: 'phonetic.txt', content: DOCUMENT, contentType: 'text/plain' });
    t.equal(uploaded.statusCode, 202, uploaded.body);
    const documentId = uploaded.json().id as string;
    const [document] = await waitForIngestion(app, 'windows', admin);
    t.equal(document!.status, 'ready');
    const chunks = (await ok<{ data: Array<{ chunk_index: number; text: string }> }>('GET', `/v1/collections/windows/documents/${documentId}/chunks?limit=100`)).data;
    t.ok(chunks.length >= 3 && chunks.length <= 2 * MAX_CONTEXT_WINDOW + 1, `a document of ${chunks.length} chunks, within one widest window`);
    const overlapping = chunks.slice(1).filter((chunk, index) => {
      const previous = chunks[index]!.text;
      return DOCUMENT.indexOf(chunk.text) < DOCUMENT.indexOf(previous) + previous.length;
    });
    t.ok(overlapping.length > 0, 'some chunks repeat the end of the chunk before them');

    await t.test('the neighbours of a result, as one text without the overlap twice', async (t) => {
      const answer = await query({ query: 'echo', top_k: 1, context_window: 1 });
      const [hit] = answer.results;
      const index = hit!.chunk_index;
      t.ok(index > 0 && index < chunks.length - 1, `the hit (chunk ${index}) has a chunk on each side`);
      t.same(hit!.context && [hit!.context.first_chunk_index, hit!.context.last_chunk_index], [index - 1, index + 1]);
      const before = chunks[index - 1]!.text;
      const after = chunks[index + 1]!.text;
      const start = DOCUMENT.indexOf(before);
      const end = DOCUMENT.indexOf(after, start) + after.length;
      t.equal(hit!.context!.text, DOCUMENT.slice(start, end), 'the document text from the chunk before to the chunk after');
      t.ok(hit!.context!.text.includes(hit!.text), 'holding the result\'s own text');
      t.type(answer.timings.context_ms, 'number', 'the window is a timed stage');
    });

    await t.test('a window over the whole document is the document', async (t) => {
      const answer = await query({ query: 'delta', top_k: 1, context_window: MAX_CONTEXT_WINDOW });
      const context = answer.results[0]!.context!;
      t.equal(context.first_chunk_index, 0, 'stops at the first chunk');
      t.equal(context.last_chunk_index, chunks.length - 1, 'stops at the last chunk');
      t.equal(context.text, DOCUMENT);
      t.ok(chunks.reduce((sum, chunk) => sum + chunk.text.length, 0) > DOCUMENT.length, 'the chunks joined as they are would be longer');
    });

    await t.test('no window unless asked for', async (t) => {
      for (const body of [{ query: 'alpha' }, { query: 'alpha', context_window: 0 }]) {
        const answer = await query(body);
        t.ok(answer.results.length > 0 && answer.results.every((result) => !('context' in result)), `${JSON.stringify(body)}: no context`);
        t.equal(answer.timings.context_ms, undefined);
      }
    });

    await t.test('a raw vector has no document and so no window', async (t) => {
      const embedding = Array.from({ length: 384 }, (_, index) => (index === 0 ? 1 : 0));
      await ok('POST', '/v1/collections/windows/vectors/upsert', { vectors: [{ id: 'raw', text: 'zulu zulu', embedding }] });
      const answer = await query({ query: 'zulu', context_window: 2 });
      t.same(answer.results.map((result) => [result.id, result.context]), [['raw', null]]);
    });

    await t.test('every query form carries it', async (t) => {
      const across = await ok<{ results: Result[] }>('POST', '/v1/query', { query: 'foxtrot', collections: ['windows'], search_mode: 'keyword', top_k: 1, context_window: 1 });
      t.ok(across.results[0]!.context!.text.includes(across.results[0]!.text), '/v1/query');
      const batch = await ok<{ results: Array<{ results: Result[] }> }>('POST', '/v1/batch/query', { queries: [{ collection: 'windows', query: 'foxtrot', search_mode: 'semantic', top_k: 1, context_window: 1 }] });
      t.ok(batch.results[0]!.results[0]!.context!.text.includes(batch.results[0]!.results[0]!.text), '/v1/batch/query');
      const hybrid = await query({ query: 'foxtrot', search_mode: 'hybrid', top_k: 3, context_window: 1 });
      t.ok(hybrid.results.every((result) => result.context === null || result.context!.text.includes(result.text)), 'hybrid');
    });

    await t.test('chunks stored before their offsets were are joined by a blank line', async (t) => {
      await services.sql('update chunks set text_start = null where document_id = ?', [documentId]);
      // Three results whose windows share chunks: each chunk is read once for all three.
      const answer = await query({ query: 'delta echo golf', top_k: 3, context_window: MAX_CONTEXT_WINDOW, skip_cache: true });
      t.equal(answer.results.length, 3);
      for (const { chunk_index: index, context } of answer.results) {
        const first = Math.max(0, index - MAX_CONTEXT_WINDOW);
        const last = Math.min(chunks.length - 1, index + MAX_CONTEXT_WINDOW);
        t.same([context!.first_chunk_index, context!.last_chunk_index], [first, last], `chunk ${index}: its window`);
        t.equal(context!.text, chunks.slice(first, last + 1).map((chunk) => chunk.text).join('\n\n'), `chunk ${index}: each chunk whole, once, in order`);
      }
    });

    await t.test('the window of a document of one chunk is that chunk', async (t) => {
      const stored = await uploadDocument(app, admin, 'windows', { filename: 'note.txt', content: 'A short note about kilo and lima.', contentType: 'text/plain' });
      t.equal(stored.statusCode, 202, stored.body);
      await waitForIngestion(app, 'windows', admin);
      const answer = await query({ query: 'kilo', context_window: 2 });
      t.same(answer.results.map((result) => [result.document_id, result.chunk_index, result.context]), [
        [stored.json().id, 0, { text: 'A short note about kilo and lima.', first_chunk_index: 0, last_chunk_index: 0 }],
      ]);
    });

    await t.test('bad input is a 400 naming the field', async (t) => {
      await refused(t, { context_window: MAX_CONTEXT_WINDOW + 1 }, 'too wide');
      await refused(t, { context_window: -1 }, 'negative');
      await refused(t, { context_window: 1.5 }, 'not an integer');
      await refused(t, { context_window: '2' }, 'a string');
    });
  });
}
