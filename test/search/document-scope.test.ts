/**
 * Queries scoped to some documents (`document_ids`) through the HTTP API, on both backends (so
 * through the embedded store and memory BM25 index, and through pgvector and SQL BM25): only the
 * listed documents' chunks come back, in every mode, however low they rank in the collection;
 * ranking statistics stay the collection's; tenants, batch items, queries across collections, the
 * cache and bad input.
 */
import t from 'tap';
import { MAX_SCOPED_DOCUMENTS } from '../../src/search/document-scope.js';
import { adminTestApp, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';
import type { App } from '../../src/app.js';
import { assertError } from '../support/assertions.js';
import { jsonRequests } from '../support/json-requests.js';

interface Result { id: string; document_id: string | null; text: string; score: number }
interface NotReady { id: string; status: string; progress: { stage: string; percent: number } | null; error: string | null }
interface QueryAnswer { results: Result[]; total: number; timings: Record<string, number | boolean | undefined>; documents_not_ready?: NotReady[] }

/** Uploads one file without waiting for it; returns the document id. */
async function uploadOne(app: App, headers: Record<string, string>, collection: string, file: { filename: string; content: string; contentType: string }): Promise<string> {
  const form = multipartUpload([file]);
  const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...headers, ...form.headers }, payload: form.payload });
  if (response.statusCode !== 202) throw new Error(`upload: ${response.statusCode} ${response.body}`);
  return response.json().id;
}

const MODES = ['semantic', 'keyword', 'hybrid'] as const;

/** Four documents all about the moon, and one that mentions it once among other things. */
const STRONG = [
  'The moon landing put astronauts on the moon; the lunar module touched the moon\'s surface.',
  'Moon phases: the new moon, the full moon and the moon\'s orbit around the earth.',
  'Moon rocks brought back from the moon tell how the moon formed.',
  'A lunar eclipse darkens the full moon when the earth shades the moon.',
];
const WEAK = 'Tomatoes, beans and squash grow well in raised beds; some gardeners sow by the moon, most by the weather, and water in the morning.';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    const { request, ok } = jsonRequests(app, admin);

    const query = (collection: string, body: Record<string, unknown>) => ok<QueryAnswer>('POST', `/v1/collections/${collection}/query`, body);
    const createCollection = (body: Record<string, unknown>) => ok('POST', '/v1/collections', body);
    /** Uploads each text as its own file; returns the document ids in the same order. */
    async function upload(collection: string, texts: string[], metadata: Record<string, unknown> = {}): Promise<string[]> {
      const ids: string[] = [];
      for (const [index, text] of texts.entries()) {
        const form = multipartUpload([{ filename: `doc-${index}.txt`, content: text, contentType: 'text/plain' }], { metadata: JSON.stringify(metadata) });
        const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...form.headers }, payload: form.payload });
        if (response.statusCode !== 202) throw new Error(`upload: ${response.statusCode} ${response.body}`);
        ids.push(response.json().id);
      }
      const documents = await waitForIngestion(app, collection, admin);
      if (documents.some((document) => document.status !== 'ready')) throw new Error(`ingestion: ${JSON.stringify(documents)}`);
      return ids;
    }

    await createCollection({ name: 'moon' });
    const strongIds = await upload('moon', STRONG);
    const [weakId] = await upload('moon', [WEAK]);
    // A raw vector has no document: a scoped query never returns it.
    const embedding = Array.from({ length: 384 }, (_, index) => (index === 0 ? 1 : 0));
    const upserted = await request('POST', '/v1/collections/moon/vectors/upsert', { vectors: [{ id: 'raw-moon', text: 'moon moon moon', embedding }] });
    t.equal(upserted.statusCode, 200, upserted.body);

    await t.test('only the listed documents, however low they rank in the collection', async (t) => {
      for (const mode of MODES) {
        const unscoped = await query('moon', { query: 'moon', search_mode: mode, top_k: 2, min_score: -1 });
        t.notOk(unscoped.results.some((result) => result.document_id === weakId), `${mode}: the weak document is not in the collection's top 2`);

        const weakOnly = await query('moon', { query: 'moon', search_mode: mode, top_k: 2, min_score: -1, document_ids: [weakId] });
        t.same(weakOnly.results.map((result) => result.document_id), [weakId], `${mode}: scoped to it, its one chunk is the answer`);
        t.equal(weakOnly.results[0]!.text, WEAK);
        t.type(weakOnly.timings.scope_ms, 'number', `${mode}: the scope is a timed stage`);

        const two = [strongIds[2]!, weakId!];
        const scoped = await query('moon', { query: 'moon', search_mode: mode, top_k: 10, min_score: -1, document_ids: two });
        t.same(new Set(scoped.results.map((result) => result.document_id)), new Set(two), `${mode}: both listed documents, nothing else`);
        t.equal(scoped.results[0]!.document_id, strongIds[2], `${mode}: ranked among themselves, the strong one first`);
      }
    });

    await t.test('scores are the collection\'s: BM25 statistics are not narrowed to the scope', async (t) => {
      const all = await query('moon', { query: 'moon rocks', search_mode: 'keyword', top_k: 50, min_score: -1 });
      const scoped = await query('moon', { query: 'moon rocks', search_mode: 'keyword', top_k: 50, min_score: -1, document_ids: [strongIds[2]!, strongIds[3]!] });
      t.equal(scoped.results.length, 2);
      for (const result of scoped.results) {
        t.equal(result.score, all.results.find((other) => other.id === result.id)?.score, `${result.id}: the same BM25 score as unscoped`);
      }
      const semanticAll = await query('moon', { query: 'moon rocks', search_mode: 'semantic', top_k: 50, min_score: -1 });
      const semanticScoped = await query('moon', { query: 'moon rocks', search_mode: 'semantic', min_score: -1, document_ids: [strongIds[0]!] });
      const expected = semanticAll.results.find((result) => result.document_id === strongIds[0])!.score;
      t.ok(Math.abs(semanticScoped.results[0]!.score - expected) < 1e-6, 'semantic: the same cosine as unscoped');
    });

    await t.test('with a metadata filter, a result must pass both', async (t) => {
      await createCollection({ name: 'filtered' });
      const [redId] = await upload('filtered', ['The moon is red tonight.'], { colour: 'red' });
      const [blueId] = await upload('filtered', ['The moon is blue tonight.'], { colour: 'blue' });
      for (const mode of MODES) {
        const both = await query('filtered', { query: 'moon tonight', search_mode: mode, min_score: -1, document_ids: [redId, blueId], filters: { colour: 'blue' } });
        t.same(both.results.map((result) => result.document_id), [blueId], `${mode}: in scope and passing the filter`);
        const none = await query('filtered', { query: 'moon tonight', search_mode: mode, min_score: -1, document_ids: [redId], filters: { colour: 'blue' } });
        t.same(none.results, [], `${mode}: in scope but filtered out`);
      }
    });

    await t.test('tenants: another tenant\'s document is not found, not disclosed', async (t) => {
      await createCollection({ name: 'tenants', tenant_field: 'tenant' });
      const [aId] = await upload('tenants', ['Moon notes of tenant a.'], { tenant: 'a' });
      const [bId] = await upload('tenants', ['Moon notes of tenant b.'], { tenant: 'b' });
      for (const mode of MODES) {
        const own = await query('tenants', { query: 'moon notes', search_mode: mode, min_score: -1, filters: { tenant: 'a' }, document_ids: [aId] });
        t.same(own.results.map((result) => result.document_id), [aId], `${mode}: a's own document`);
        const other = await request('POST', '/v1/collections/tenants/query', { query: 'moon notes', search_mode: mode, filters: { tenant: 'a' }, document_ids: [aId, bId] });
        assertError(t, other, 404, `document_ids: document ${bId} not found in collection tenants`, `${mode}: b's document asked for as a, the same answer as for a document that does not exist:`);
      }
      const missingTenant = await request('POST', '/v1/collections/tenants/query', { query: 'moon', document_ids: [aId] });
      assertError(t, missingTenant, 400, /filters\.tenant/, 'no tenant: the tenant is still required;');
    });

    await t.test('batch items may be scoped, each answering or failing on its own', async (t) => {
      const missing = '00000000-0000-4000-8000-000000000000';
      const response = await request('POST', '/v1/batch/query', {
        queries: [
          { collection: 'moon', query: 'moon', search_mode: 'keyword', min_score: -1, document_ids: [weakId] },
          { collection: 'moon', query: 'moon', document_ids: [missing] },
        ],
      });
      t.equal(response.statusCode, 200, response.body);
      const [scoped, failed] = response.json().results;
      t.same(scoped.results.map((result: Result) => result.document_id), [weakId]);
      t.same(failed.error, { status: 404, detail: `document_ids: document ${missing} not found in collection moon` });
    });

    await t.test('a cached unscoped answer is not served for a scoped query, nor the reverse', async (t) => {
      const body = { query: 'full moon eclipse', search_mode: 'hybrid', min_score: -1 };
      const first = await query('moon', body);
      t.ok(first.results.some((result) => result.document_id !== weakId), 'unscoped: the strong documents');
      const scoped = await query('moon', { ...body, document_ids: [weakId] });
      t.same(scoped.results.map((result) => result.document_id), [weakId], 'scoped after the unscoped one');
      const again = await query('moon', body);
      t.equal(again.timings.cached, true, 'the unscoped answer was cached');
      t.same(again.results.map((result) => result.id), first.results.map((result) => result.id), 'and is still the unscoped one');
    });

    await t.test('a deleted document is no longer in scope', async (t) => {
      await createCollection({ name: 'deleting' });
      const [keptId, deletedId] = await upload('deleting', ['The moon stays.', 'The moon goes.']);
      const before = await query('deleting', { query: 'moon', min_score: -1, document_ids: [keptId, deletedId] });
      t.equal(before.results.length, 2);
      const deleted = await request('DELETE', `/v1/collections/deleting/documents/${deletedId}`);
      t.equal(deleted.statusCode, 204, deleted.body);
      const after = await request('POST', '/v1/collections/deleting/query', { query: 'moon', document_ids: [keptId, deletedId] });
      assertError(t, after, 404, `document_ids: document ${deletedId} not found in collection deleting`, 'after the delete:');
    });

    await t.test('a listed document that failed is named beside the results', async (t) => {
      await createCollection({ name: 'readiness' });
      const [readyId] = await upload('readiness', ['The moon is up.']);
      const failedId = await uploadOne(app, admin, 'readiness', { filename: 'broken.pdf', content: '%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage without xref\n', contentType: 'application/pdf' });
      await waitForIngestion(app, 'readiness', admin);
      const answer = await query('readiness', { query: 'moon', min_score: -1, document_ids: [failedId, readyId] });
      t.same(answer.results.map((result) => result.document_id), [readyId]);
      t.equal(answer.documents_not_ready?.length, 1);
      t.match(answer.documents_not_ready![0], { id: failedId, status: 'failed', error: /^parsing failed/, progress: { stage: 'parsing' } });
      const allReady = await query('readiness', { query: 'moon', min_score: -1, document_ids: [readyId] });
      t.same(allReady.documents_not_ready, [], 'every listed document ready: an empty list');
      const unscoped = await query('readiness', { query: 'moon', min_score: -1 });
      t.notOk('documents_not_ready' in unscoped, 'an unscoped query does not carry it');

      const batch = await ok<{ results: QueryAnswer[] }>('POST', '/v1/batch/query', { queries: [{ collection: 'readiness', query: 'moon', document_ids: [failedId] }] });
      t.same(batch.results[0]!.documents_not_ready?.map((document) => document.status), ['failed'], 'a batch item says so too');
    });

    await t.test('bad input is a 4xx naming the problem', async (t) => {
      const url = '/v1/collections/moon/query';
      assertError(t, await request('POST', url, { query: 'moon', document_ids: [] }), 400, /document_ids/, 'empty list:');
      assertError(t, await request('POST', url, { query: 'moon', document_ids: ['doc-1'] }), 400, /document_ids/, 'not a uuid:');
      assertError(t, await request('POST', url, { query: 'moon', document_ids: weakId }), 400, /document_ids/, 'not a list:');
      const tooMany = Array.from({ length: MAX_SCOPED_DOCUMENTS + 1 }, (_, index) => `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`);
      assertError(t, await request('POST', url, { query: 'moon', document_ids: tooMany }), 400, /document_ids/, 'too many:');

      const unknown = Array.from({ length: 7 }, (_, index) => `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`);
      assertError(
        t, await request('POST', url, { query: 'moon', document_ids: [weakId, ...unknown] }), 404,
        `document_ids: documents ${unknown.slice(0, 5).join(', ')} and 2 more not found in collection moon`, 'seven unknown:',
      );
      assertError(
        t, await request('POST', url, { query: 'moon', document_ids: [weakId, ...unknown.slice(0, 5)] }), 404,
        `document_ids: documents ${unknown.slice(0, 5).join(', ')} not found in collection moon`, 'five unknown, all named:',
      );
      const upper = await query('moon', { query: 'moon', search_mode: 'keyword', min_score: -1, document_ids: [weakId!.toUpperCase()] });
      t.same(upper.results.map((result) => result.document_id), [weakId], 'an id in upper case is the same document');

      const [otherCollectionDocument] = await upload('filtered', ['Moon elsewhere.']);
      assertError(
        t, await request('POST', url, { query: 'moon', document_ids: [otherCollectionDocument] }), 404,
        `document_ids: document ${otherCollectionDocument} not found in collection moon`, 'a document of another collection:',
      );
      assertError(t, await request('POST', '/v1/query', { query: 'moon', collections: ['moon'], document_ids: [] }), 400, /document_ids/, '/v1/query, empty list:');
    });

    await t.test('across collections (/v1/query), each collection is asked about its own listed documents', async (t) => {
      interface FusedAnswer extends Omit<QueryAnswer, 'timings'> { results: Array<Result & { collection: string }>; collections: string[]; timings: { total_ms: number; scope_ms?: number; per_collection: Record<string, unknown> } }
      const across = (body: Record<string, unknown>) => ok<FusedAnswer>('POST', '/v1/query', { query: 'moon', min_score: -1, ...body });
      const [blueId] = (await query('filtered', { query: 'blue', search_mode: 'keyword', top_k: 1 })).results.map((result) => result.document_id);
      for (const mode of MODES) {
        const answer = await across({ search_mode: mode, collections: ['moon', 'filtered', 'deleting'], document_ids: [weakId, blueId] });
        t.same(
          answer.results.map((result) => [result.collection, result.document_id]).sort(),
          [['filtered', blueId], ['moon', weakId]].sort(),
          `${mode}: the two listed documents, each named with its collection, and nothing else`,
        );
        t.same(Object.keys(answer.timings.per_collection).sort(), ['filtered', 'moon'], `${mode}: the collection holding none of them was not queried`);
        t.same(answer.collections, ['moon', 'filtered', 'deleting'], `${mode}: the collections asked for are still named`);
        t.same(answer.documents_not_ready, [], `${mode}: every listed document ready`);
        t.type(answer.timings.scope_ms, 'number', `${mode}: the lookup of the listed documents is timed, once for all collections`);
      }
      const unscoped = await across({ collections: ['moon', 'filtered'] });
      t.notOk('documents_not_ready' in unscoped, 'an unscoped query does not carry documents_not_ready');
      t.notOk('scope_ms' in unscoped.timings, 'nor a scope timing');

      const [failed] = (await ok<{ data: Array<{ id: string; status: string }> }>('GET', '/v1/collections/readiness/documents?status=failed')).data;
      const withFailed = await across({ collections: ['readiness', 'moon'], document_ids: [weakId, failed!.id] });
      t.same(withFailed.results.map((result) => result.document_id), [weakId], 'the failed document has nothing indexed');
      t.match(withFailed.documents_not_ready, [{ id: failed!.id, status: 'failed' }], 'and is named, from its own collection');

      const missing = '00000000-0000-4000-8000-000000000001';
      assertError(
        t, await request('POST', '/v1/query', { query: 'moon', collections: ['moon', 'filtered'], document_ids: [weakId, missing] }), 404,
        `document_ids: document ${missing} not found in collections moon, filtered`, 'a document none of the collections holds:',
      );
      assertError(
        t, await request('POST', '/v1/query', { query: 'moon', collections: ['filtered'], document_ids: [weakId] }), 404,
        `document_ids: document ${weakId} not found in collection filtered`, 'a document of a collection not asked for:',
      );

      const [aId, bId] = (await ok<{ data: Array<{ id: string; metadata: { tenant: string } }> }>('GET', '/v1/collections/tenants/documents'))
        .data.sort((left, right) => left.metadata.tenant.localeCompare(right.metadata.tenant)).map((document) => document.id);
      const own = await across({ collections: ['tenants'], filters: { tenant: 'a' }, document_ids: [aId] });
      t.same(own.results.map((result) => result.document_id), [aId], 'a tenant\'s own document');
      assertError(
        t, await request('POST', '/v1/query', { query: 'moon', collections: ['tenants', 'moon'], filters: { tenant: 'a' }, document_ids: [bId] }), 404,
        `document_ids: document ${bId} not found in collections tenants, moon`, 'another tenant\'s document, the same answer as for one that does not exist:',
      );
      assertError(t, await request('POST', '/v1/query', { query: 'moon', collections: ['tenants'], document_ids: [aId] }), 400, /filters\.tenant/, 'no tenant:');
    });
  });
}

for (const backend of testBackends()) {
  t.test(`${backend}: a document still pending is named, and the provisional answer is not cached`, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend, {}, { startWorkers: false });
    const { ok } = jsonRequests(app, admin);
    await ok('POST', '/v1/collections', { name: 'fresh' });
    const id = await uploadOne(app, admin, 'fresh', { filename: 'fresh.txt', content: 'The harbour moon rises over the cranes.', contentType: 'text/plain' });
    const body = { query: 'harbour moon', min_score: -1, document_ids: [id] };

    const early = await ok<QueryAnswer>('POST', '/v1/collections/fresh/query', body);
    t.same(early.results, [], 'nothing of it is indexed yet');
    t.match(early.documents_not_ready, [{ id, status: 'pending', error: null }]);
    const again = await ok<QueryAnswer>('POST', '/v1/collections/fresh/query', body);
    t.notOk(again.timings.cached, 'the provisional answer was not cached');

    await services.start();
    await waitForIngestion(app, 'fresh', admin);
    const ready = await ok<QueryAnswer>('POST', '/v1/collections/fresh/query', body);
    t.notOk(ready.timings.cached);
    t.same(ready.results.map((result) => result.document_id), [id], 'answered from the document once it is indexed');
    t.same(ready.documents_not_ready, []);
    const cached = await ok<QueryAnswer>('POST', '/v1/collections/fresh/query', body);
    t.equal(cached.timings.cached, true, 'a complete answer is cached');
    t.same(cached.documents_not_ready, [], 'with its list');
  });
}
