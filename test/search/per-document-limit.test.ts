/**
 * `max_per_document` through the HTTP API, on both backends: a long document whose chunks all
 * match no longer fills `top_k`; the query searches deeper to fill it from other documents, in every
 * mode; raw vectors are sources of their own; every query form; bad input.
 */
import t from 'tap';
import { MAX_PER_DOCUMENT_LIMIT } from '../../src/search/per-document-limit.js';
import { adminTestApp, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';
import { jsonRequests } from '../support/json-requests.js';

interface Result { id: string; document_id: string | null; score: number }
interface QueryAnswer { results: Result[]; timings: Record<string, number | boolean | undefined> }

const MODES = ['semantic', 'keyword', 'hybrid'] as const;

/** Twelve paragraphs about routers, a chunk each (chunk_size 200, paragraph strategy). */
const MANUAL = Array.from({ length: 12 }, (_, index) =>
  `Router setup step ${index + 1}: the router restarts, the router lights blink, and the router is ready.`).join('\n\n');
/** Three documents that mention a router once, among other things. */
const NOTES = [
  'Kitchen notes: bake bread at dawn, buy flour, and ask about the router in the hall before noon.',
  'Garden notes: prune roses, water the beans, and move the router shelf away from the hose.',
  'Travel notes: pack light, print tickets, and unplug the router before leaving for the airport.',
];

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    const { request, ok } = jsonRequests(app, admin);

    const query = (body: Record<string, unknown>) => ok<QueryAnswer>('POST', '/v1/collections/sources/query', { query: 'router', min_score: -1, ...body });
    async function upload(filename: string, content: string, collection = 'sources'): Promise<string> {
      const form = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...form.headers }, payload: form.payload });
      if (response.statusCode !== 202) throw new Error(`upload: ${response.statusCode} ${response.body}`);
      return response.json().id;
    }
    const documentsOf = (answer: QueryAnswer) => answer.results.map((result) => result.document_id);

    await ok('POST', '/v1/collections', { name: 'sources', chunk_size: 200, chunk_overlap: 0, chunk_strategy: 'paragraph' });
    const manualId = await upload('manual.txt', MANUAL);
    const noteIds: string[] = [];
    for (const [index, note] of NOTES.entries()) noteIds.push(await upload(`note-${index}.txt`, note));
    const documents = await waitForIngestion(app, 'sources', admin);
    t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready', 'ready']);

    await t.test('one long document no longer fills top_k', async (t) => {
      for (const mode of MODES) {
        const unlimited = await query({ search_mode: mode, top_k: 5 });
        t.same(documentsOf(unlimited), Array(5).fill(manualId), `${mode}: without a limit, the manual fills all five`);

        const one = await query({ search_mode: mode, top_k: 5, max_per_document: 1 });
        t.equal(one.results.length, 4, `${mode}: four documents, one result each (nothing else to fill the fifth)`);
        t.same(new Set(documentsOf(one)), new Set([manualId, ...noteIds]), `${mode}: each document once`);
        t.equal(one.results[0]!.id, unlimited.results[0]!.id, `${mode}: the manual's best chunk still leads`);
        t.ok(one.results.every((result, index) => index === 0 || result.score <= one.results[index - 1]!.score), `${mode}: in score order`);
        t.type(one.timings.per_document_ms, 'number', `${mode}: a timed stage`);

        const two = await query({ search_mode: mode, top_k: 5, max_per_document: 2 });
        t.same(documentsOf(two).filter((id) => id === manualId).length, 2, `${mode}: two of the manual`);
        t.same(new Set(documentsOf(two).filter((id) => id !== manualId)), new Set(noteIds), `${mode}: and the three notes`);
      }
    });

    await t.test('a limit that changes nothing leaves the answer as it was', async (t) => {
      for (const mode of MODES) {
        const unlimited = await query({ search_mode: mode, top_k: 3, skip_cache: true });
        const limited = await query({ search_mode: mode, top_k: 3, max_per_document: 3 });
        t.same(limited.results.map((result) => [result.id, result.score]), unlimited.results.map((result) => [result.id, result.score]), mode);
      }
    });

    await t.test('raw vectors are sources of their own', async (t) => {
      const embedding = Array.from({ length: 384 }, (_, index) => (index === 7 ? 1 : 0));
      await ok('POST', '/v1/collections/sources/vectors/upsert', {
        vectors: ['one', 'two', 'three'].map((id) => ({ id: `raw-${id}`, text: `router router router router ${id}`, embedding })),
      });
      const answer = await query({ search_mode: 'keyword', top_k: 10, max_per_document: 1 });
      t.same(answer.results.filter((result) => result.document_id === null).map((result) => result.id).sort(), ['raw-one', 'raw-three', 'raw-two'], 'all three raw vectors');
      t.equal(answer.results.filter((result) => result.document_id === manualId).length, 1, 'and the manual once');
    });

    await t.test('hybrid searches deeper while one of its lists is not exhausted', async (t) => {
      // Hybrid's lists are 50 deep here. The keyword list holds the three notes that name the
      // tower (exhausted); the semantic list is full of the log's 60 chunks, which share letters
      // with "tower" but not the word, and the receipt, sharing neither, ranks below them all.
      const log = Array.from({ length: 60 }, (_, index) =>
        `Towing log ${index + 1}: the towing crew towed the barge, lowered its towage fee and towed it past the towpath at low water.`).join('\n\n');
      const towerNotes = ['Bell notes: the tower clock chimed at noon.', 'Map notes: a tower stands on the hill.', 'Walk notes: we climbed the tower at dusk.'];
      await ok('POST', '/v1/collections', { name: 'deeper', chunk_size: 200, chunk_overlap: 0, chunk_strategy: 'paragraph' });
      const logId = await upload('log.txt', log, 'deeper');
      const noteIds = [];
      for (const [index, note] of towerNotes.entries()) noteIds.push(await upload(`tower-${index}.txt`, note, 'deeper'));
      const receiptId = await upload('receipt.txt', 'Receipt: bread, milk, eggs, cheese and apples, paid in cash.', 'deeper');
      await waitForIngestion(app, 'deeper', admin);

      t.equal((await ok<{ chunk_count: number }>('GET', `/v1/collections/deeper/documents/${logId}`)).chunk_count, 60, 'the log is 60 chunks');
      const keyword = await ok<QueryAnswer>('POST', '/v1/collections/deeper/query', { query: 'tower', search_mode: 'keyword', top_k: 50, min_score: -1 });
      t.same(new Set(documentsOf(keyword)), new Set(noteIds), 'the keyword list holds the three notes only');
      const semantic = await ok<QueryAnswer>('POST', '/v1/collections/deeper/query', { query: 'tower', search_mode: 'semantic', top_k: 50, min_score: -1 });
      t.notOk(documentsOf(semantic).includes(receiptId), 'the receipt is not in the semantic list 50 deep');

      const answer = await ok<QueryAnswer>('POST', '/v1/collections/deeper/query', { query: 'tower', search_mode: 'hybrid', top_k: 5, max_per_document: 1, min_score: -1 });
      t.same(new Set(documentsOf(answer)), new Set([...noteIds, logId, receiptId]), 'five documents: the receipt found deeper');
    });

    await t.test('every query form takes it', async (t) => {
      const across = await ok<{ results: Result[] }>('POST', '/v1/query', { query: 'router', collections: ['sources'], search_mode: 'semantic', top_k: 4, max_per_document: 1, min_score: -1 });
      t.equal(new Set(across.results.map((result) => result.document_id ?? result.id)).size, across.results.length, '/v1/query: no document twice');
      const batch = await ok<{ results: Array<{ results: Result[] }> }>('POST', '/v1/batch/query', { queries: [{ collection: 'sources', query: 'router', search_mode: 'semantic', top_k: 4, max_per_document: 1, min_score: -1 }] });
      const items = batch.results[0]!.results;
      t.equal(new Set(items.map((result) => result.document_id ?? result.id)).size, items.length, '/v1/batch/query: no document twice');
    });

    await t.test('bad input is a 400 naming the field', async (t) => {
      for (const [value, what] of [[0, 'zero'], [MAX_PER_DOCUMENT_LIMIT + 1, 'too many'], [1.5, 'not an integer'], ['1', 'a string']] as const) {
        const response = await request('POST', '/v1/collections/sources/query', { query: 'router', max_per_document: value });
        assertError(t, response, 400, /max_per_document/, `${what}: the detail names the field;`);
      }
    });
  });
}
