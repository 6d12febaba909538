/**
 * A dotted `tenant_field` (`org.id`) through HTTP: uploads, upload sessions and raw-vector upserts
 * read it as a path into nested metadata, as query filters do (src/search/filters/), so what is
 * accepted is found again by `{"filters": {"org.id": ...}}` in every search mode.
 */
import t from 'tap';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';

const DOCUMENT_TEXT = 'Lighthouse keepers recorded storms and passing ships in the logbook.';
const VECTOR_TEXT = 'Tide pools hold anemones, crabs and barnacles.';
const MODES = ['semantic', 'keyword', 'hybrid'] as const;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, admin } = ctx;

    const upload = (metadata: unknown) => {
      const body = multipartUpload([{ filename: 'log.txt', content: DOCUMENT_TEXT, contentType: 'text/plain' }], { metadata: JSON.stringify(metadata) });
      return app.inject({ method: 'POST', url: '/v1/collections/dotted/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
    };
    const vector = (id: string, metadata: unknown) => ({ id, embedding: Array.from(hashedTextVector(VECTOR_TEXT, 384)), text: VECTOR_TEXT, metadata });
    const upsert = (vectors: unknown[]) => app.inject({ method: 'POST', url: '/v1/collections/dotted/vectors/upsert', headers: admin, payload: { vectors } });
    const query = async (text: string, mode: string, filters: Record<string, unknown>) => {
      const response = await app.inject({ method: 'POST', url: '/v1/collections/dotted/query', headers: admin, payload: { query: text, search_mode: mode, filters, skip_cache: true } });
      if (response.statusCode !== 200) throw new Error(`query: ${response.statusCode} ${response.body}`);
      return response.json().results as Array<{ id: string; document_id: string | null; metadata: any }>;
    };
    const counts = async () => (await app.inject({ url: '/v1/collections/dotted/stats', headers: admin })).json() as { documents: number; raw_vectors: number };
    const tenantColumn = async (id: string) =>
      (await ctx.services.sql<{ tenant: string | null }>('select c.tenant from chunks c join collections k on k.id = c.collection_id where k.name = ? and c.id = ?', ['dotted', id]))[0]?.tenant;

    await createTestCollection(app, admin, { name: 'dotted', tenant_field: 'org.id' });

    await t.test('nested metadata is the accepted form; every mode finds it with the dotted filter', async (t) => {
      const documents: Record<string, string> = {};
      for (const org of ['acme', 'globex']) {
        const response = await upload({ org: { id: org }, kind: 'log' });
        t.equal(response.statusCode, 202, `${org}: upload ${response.body}`);
        documents[org] = response.json().id;
      }
      const upserted = await upsert([vector('acme-pool', { org: { id: 'acme' } }), vector('globex-pool', { org: { id: 'globex' } })]);
      t.equal(upserted.statusCode, 200, upserted.body);
      const ready = await waitForIngestion(app, 'dotted', admin);
      t.same(ready.map((document) => document.status), ['ready', 'ready']);
      t.equal(await tenantColumn('acme-pool'), 'acme', "the raw vector's tenant column holds the nested value");

      for (const org of ['acme', 'globex']) {
        for (const mode of MODES) {
          const logs = await query(DOCUMENT_TEXT, mode, { 'org.id': org });
          t.ok(logs.some((result) => result.document_id === documents[org]), `${mode}, ${org}: its document is found`);
          const pools = await query(VECTOR_TEXT, mode, { 'org.id': org });
          t.ok(pools.some((result) => result.id === `${org}-pool`), `${mode}, ${org}: its raw vector is found`);
          t.ok([...logs, ...pools].every((result) => result.metadata.org.id === org), `${mode}, ${org}: nothing of the other tenant`);
        }
      }
    });

    await t.test('a flat "org.id" key is not the tenant: refused, naming the nested form; nothing written', async (t) => {
      const before = await counts();
      const flatUpload = await upload({ 'org.id': 'acme' });
      assertError(t, flatUpload, 400, /^metadata\.org\.id is required.*\{"org": \{"id": "<tenant>"\}\}.*a key named "org\.id" is not that path/, 'upload');
      const flatUpsert = await upsert([vector('fresh', { org: { id: 'acme' } }), vector('flat', { 'org.id': 'acme' })]);
      assertError(t, flatUpsert, 400, /^vectors\[1\]\.metadata\.org\.id is required/, 'upsert');
      assertError(t, await upsert([vector('scalar', { org: 'acme' })]), 400, /org\.id is required/, 'org a string, not an object');
      const session = await app.inject({ method: 'POST', url: '/v1/collections/dotted/uploads', headers: admin, payload: { metadata: { 'org.id': 'acme' } } });
      assertError(t, session, 400, /metadata\.org\.id is required/, 'upload session');
      t.same(await counts(), before, 'no document and no vector written');
      const nestedSession = await app.inject({ method: 'POST', url: '/v1/collections/dotted/uploads', headers: admin, payload: { metadata: { org: { id: 'acme' } } } });
      t.equal(nestedSession.statusCode, 201, `upload session with nested metadata: ${nestedSession.body}`);
    });

    await t.test('with both keys the nested value is the tenant, as the filter reads it', async (t) => {
      const response = await upsert([vector('both-keys', { 'org.id': 'globex', org: { id: 'acme' } })]);
      t.equal(response.statusCode, 200, response.body);
      t.equal(await tenantColumn('both-keys'), 'acme');
      for (const mode of MODES) {
        t.ok((await query(VECTOR_TEXT, mode, { 'org.id': 'acme' })).some((result) => result.id === 'both-keys'), `${mode}: acme finds it`);
        t.notOk((await query(VECTOR_TEXT, mode, { 'org.id': 'globex' })).some((result) => result.id === 'both-keys'), `${mode}: globex does not`);
      }
    });

    await t.test('tenants 5 and "5" are one tenant: in duplicates, in results and in BM25 statistics', async (t) => {
      await createTestCollection(app, admin, { name: 'typed-tenants', tenant_field: 'tenant' });
      const send = (tenant: unknown, content = 'Zebras graze on the savanna at dawn.') => {
        const body = multipartUpload([{ filename: 'zebras.txt', content, contentType: 'text/plain' }], { metadata: JSON.stringify({ tenant }) });
        return app.inject({ method: 'POST', url: '/v1/collections/typed-tenants/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      };
      const number = await send(5);
      t.equal(number.statusCode, 202);
      const again = await send('5');
      t.equal(again.statusCode, 200, 'the same content under "5" is a duplicate of the document under 5');
      t.match(again.json(), { id: number.json().id, duplicate: true });
      const text = await send('5', 'Zebras drink at the river while lions sleep.');
      t.equal(text.statusCode, 202);
      t.same(text.json().metadata, { tenant: '5' }, 'metadata keeps the JSON value as sent');
      const other = await send(6, 'Zebras and zebras and more zebras cross the plain.');
      t.equal(other.statusCode, 202);
      await waitForIngestion(app, 'typed-tenants', admin);
      const both = [number.json().id, text.json().id].sort();
      for (const mode of MODES) {
        const answers = await Promise.all([5, '5', { $eq: 5 }].map(async (tenant) => {
          const response = await app.inject({ method: 'POST', url: '/v1/collections/typed-tenants/query', headers: admin, payload: { query: 'zebras', search_mode: mode, filters: { tenant }, skip_cache: true } });
          t.equal(response.statusCode, 200, response.body);
          return response.json().results as Array<{ document_id: string; score: number }>;
        }));
        for (const [index, results] of answers.entries()) {
          t.same(results.map((result) => result.document_id).sort(), both, `${mode}, filter ${index}: both documents of tenant 5, none of tenant 6`);
        }
        t.same(answers[1], answers[0], `${mode}: 5 and "5" rank and score alike (one set of statistics)`);
      }
      for (const tenant of [5, '5']) {
        const listed = await app.inject({ url: `/v1/collections/typed-tenants/documents?filters=${encodeURIComponent(JSON.stringify({ tenant }))}`, headers: admin });
        t.same(listed.json().data.map((document: { id: string }) => document.id).sort(), both, `the document list, filter ${JSON.stringify(tenant)}: tenant 5's documents`);
      }
      const narrowed = await app.inject({ method: 'POST', url: '/v1/collections/typed-tenants/query', headers: admin, payload: { query: 'zebras', search_mode: 'keyword', filters: { tenant: { $eq: 5, $ne: '5' } }, skip_cache: true } });
      t.same(narrowed.json().results.map((result: { document_id: string }) => result.document_id), [number.json().id], 'other conditions on the tenant field still compare JSON values');
    });

    await t.test('a tenant field named like an Object.prototype member ("constructor") is read from the request alone', async (t) => {
      await createTestCollection(app, admin, { name: 'constructor-tenants', tenant_field: 'constructor' });
      const query = (filters: unknown) => app.inject({ method: 'POST', url: '/v1/collections/constructor-tenants/query', headers: admin, payload: { query: 'zebras', ...(filters === undefined ? {} : { filters }) } });
      for (const filters of [undefined, { other: 1 }]) {
        assertError(t, await query(filters), 400, /^filters\.constructor is required: collection constructor-tenants separates tenants by "constructor"/, `filters ${JSON.stringify(filters)}`);
      }
      const body = multipartUpload([{ filename: 'zebras.txt', content: 'Zebras graze on the savanna at dawn.', contentType: 'text/plain' }], { metadata: '{}' });
      const upload = await app.inject({ method: 'POST', url: '/v1/collections/constructor-tenants/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      assertError(t, upload, 400, /^metadata\.constructor is required/, 'upload without it');
      t.equal((await query({ constructor: 'acme' })).statusCode, 200, 'with it');
    });
  });
}
