import t from 'tap';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';
import {
  adminTestApp, bearer, createApiKey, multipartUpload, testBackends, waitForIngestion,
} from '../support/test-app.js';
import { assertError } from '../support/assertions.js';
import { storedOriginals } from '../support/stored-originals.js';


const CONTRACT_DEFAULTS = {
  embedding_provider: 'local',
  dimension: 384,
  chunk_size: 800,
  chunk_overlap: 100,
  chunk_strategy: 'recursive',
  default_top_k: 10,
  default_min_score: 0,
  default_search_mode: 'hybrid',
};

const TEXT_A = 'Lighthouse keepers maintained the lamp every night.\n\nThe keeper logbook recorded storms and passing ships.';
const TEXT_B = 'Sourdough bread needs a starter, flour, water and salt.\n\nBakers fold the dough several times before baking.';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, cookie, admin } = ctx;

    const create = (payload: unknown, headers: Record<string, string> = admin) =>
      app.inject({ method: 'POST', url: '/v1/collections', headers, payload: payload as object });
    const get = (name: string, headers: Record<string, string> = admin) => app.inject({ url: `/v1/collections/${name}`, headers });
    const patch = (name: string, payload: unknown, headers: Record<string, string> = admin) =>
      app.inject({ method: 'PATCH', url: `/v1/collections/${name}`, headers, payload: payload as object });
    const list = (query = '', headers: Record<string, string> = admin) => app.inject({ url: `/v1/collections${query}`, headers });
    const totalCollections = async () => (await list()).json().total as number;
    const upload = (name: string, filename: string, content: string, headers: Record<string, string> = admin, fields: Record<string, string> = {}) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/plain' }], fields);
      return app.inject({ method: 'POST', url: `/v1/collections/${name}/documents`, headers: { ...headers, ...body.headers }, payload: body.payload });
    };
    const query = (name: string, payload: Record<string, unknown>, headers: Record<string, string> = admin) =>
      app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers, payload });
    const originalsOf = (collectionId: string) => storedOriginals(ctx.services, collectionId);
    const originalRows = async (documentIds: string[]) => Number((await ctx.services.sql<{ count: string | number }>(
      'select count(*) as count from document_originals where document_id = any(?::uuid[])', [documentIds],
    ))[0]!.count);

    await t.test('create with only a name: 201 with the contract defaults', async (t) => {
      const response = await create({ name: 'defaults' });
      t.equal(response.statusCode, 201, response.body);
      const body = response.json();
      t.match(body, {
        ...CONTRACT_DEFAULTS,
        name: 'defaults',
        description: null,
        tenant_field: null,
        metadata_schema: null,
        reranking_enabled: false,
        multimodal_enabled: false,
        multimodal_enrichment_enabled: false,
        has_embedding_api_key: false,
        has_reranking_api_key: false,
        metadata: {},
      });
      t.match(body.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      t.type(body.embedding_model, 'string');
      t.ok(Date.parse(body.created_at), 'created_at is a timestamp');
      t.notOk('embedding_api_key' in body);
      t.notOk('reranking_api_key' in body);
      const fetched = await get('defaults');
      t.equal(fetched.statusCode, 200);
      t.same(fetched.json(), body, 'GET returns the same record');
      // api-contract 3: local is the default when reranking is enabled without a model; the record showed null.
      t.equal(body.reranking_model, 'local', 'the reranker that would run');
      const enabled = await create({ name: 'rerank-default', reranking_enabled: true });
      t.match(enabled.json(), { reranking_enabled: true, reranking_model: 'local' }, 'enabled without a model: local');
      const patched = await app.inject({ method: 'PATCH', url: '/v1/collections/rerank-default', headers: admin, payload: { reranking_model: null } });
      t.match(patched.json(), { reranking_model: 'local' }, 'a model set back to null is local again');
      t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/rerank-default', headers: admin })).statusCode, 204, 'the later tests count the collections');
    });

    await t.test('create with every field; api keys are write-only; null clears them', async (t) => {
      const schema = { type: 'object', properties: { lang: { type: 'string' } } };
      const full = {
        name: 'full_Set-1',
        description: 'Every field',
        embedding_preset_id: null,
        embedding_provider: 'local',
        embedding_model: 'local-hash-256',
        embedding_api_key: 'sk-embed-SECRET-123',
        embedding_base_url: 'http://localhost:11434/v1',
        dimension: 256,
        chunk_size: 500,
        chunk_overlap: 50,
        chunk_strategy: 'paragraph',
        tenant_field: 'org',
        metadata_schema: schema,
        reranking_enabled: true,
        reranking_model: 'local',
        reranking_api_key: 'rr-SECRET-456',
        multimodal_enabled: true,
        multimodal_enrichment_enabled: true,
        default_top_k: 7,
        default_min_score: 0.25,
        default_search_mode: 'keyword',
        metadata: { team: 'docs', tier: 2 },
      };
      const response = await create(full);
      t.equal(response.statusCode, 201, response.body);
      const { embedding_api_key: _e, reranking_api_key: _r, ...visible } = full;
      const expected = { ...visible, has_embedding_api_key: true, has_reranking_api_key: true };
      t.match(response.json(), expected);
      t.same(response.json().metadata_schema, schema);
      t.same(response.json().metadata, full.metadata);
      for (const answer of [response, await get('full_Set-1'), await list('?name=full_set')]) {
        t.notOk(answer.body.includes('SECRET'), 'no response carries a plaintext api key');
        t.notOk(answer.body.includes('"embedding_api_key"') || answer.body.includes('"reranking_api_key"'), 'key fields are never returned');
      }
      t.match((await get('full_Set-1')).json(), expected);

      const clearEmbedding = await patch('full_Set-1', { embedding_api_key: null });
      t.equal(clearEmbedding.statusCode, 200, clearEmbedding.body);
      t.match(clearEmbedding.json(), { has_embedding_api_key: false, has_reranking_api_key: true });
      const clearReranking = await patch('full_Set-1', { reranking_api_key: null });
      t.equal(clearReranking.statusCode, 200, clearReranking.body);
      t.match(clearReranking.json(), { has_embedding_api_key: false, has_reranking_api_key: false });
      t.match((await get('full_Set-1')).json(), { has_embedding_api_key: false, has_reranking_api_key: false }, 'cleared for good');
      const setAgain = await patch('full_Set-1', { embedding_api_key: 'sk-new-SECRET' });
      t.equal(setAgain.statusCode, 200);
      t.equal(setAgain.json().has_embedding_api_key, true);
      t.notOk(setAgain.body.includes('SECRET'));
      const omitted = await patch('full_Set-1', { description: 'keys untouched' });
      t.match(omitted.json(), { has_embedding_api_key: true, has_reranking_api_key: false }, 'an update without the key keeps it');
    });

    await t.test('refused creates: 409 duplicate, 400 for bad input; nothing is created', async (t) => {
      const before = await totalCollections();
      assertError(t, await create({ name: 'defaults' }), 409, /defaults/, 'duplicate name');
      for (const name of ['a b', 'x'.repeat(65), '', 'dot.name', 'slash/name', 'ünïcode']) {
        assertError(t, await create({ name }), 400, undefined, `name ${JSON.stringify(name)}`);
      }
      assertError(t, await create({}), 400, /name/, 'missing name');
      assertError(t, await create({ name: 'overlap-eq', chunk_size: 100, chunk_overlap: 100 }), 400, /chunk_overlap/, 'overlap = size');
      assertError(t, await create({ name: 'overlap-gt', chunk_size: 100, chunk_overlap: 150 }), 400, /chunk_overlap/, 'overlap > size');
      assertError(t, await create({ name: 'bad-schema', metadata_schema: { type: 'nonsense' } }), 400, /metadata_schema/, 'invalid JSON Schema');
      assertError(t, await create({ name: 'bad-schema2', metadata_schema: { properties: 5 } }), 400, /metadata_schema/, 'invalid JSON Schema (properties)');
      assertError(t, await create({ name: 'bad-schema3', metadata_schema: 'string' }), 400, undefined, 'metadata_schema not an object');
      // Metadata is always an object: a schema for anything else would refuse every upload.
      for (const [name, type] of [['string-schema', 'string'], ['array-schema', ['array', 'null']]] as const) {
        assertError(t, await create({ name, metadata_schema: { type } }), 400, /^metadata_schema must accept an object: metadata is always a JSON object/, `metadata_schema type ${JSON.stringify(type)}`);
      }
      // A tenant_field is a dotted path, as filters read it: an empty segment would refuse every query.
      for (const [index, field] of ['a..b', '.a', 'a.', '.'].entries()) {
        assertError(t, await create({ name: `empty-segment-${index}`, tenant_field: field }), 400, /^tenant_field ".*" has an empty path segment/, `tenant_field ${JSON.stringify(field)}`);
      }
      // JSON bodies with these keys are refused, so no query could carry the tenant: the collection could be filled, never searched.
      for (const [index, field] of ['__proto__', 'org.__proto__', 'constructor.prototype', 'a.constructor.prototype.b'].entries()) {
        assertError(t, await create({ name: `proto-tenant-${index}`, tenant_field: field }), 400, /^tenant_field ".*" names a "__proto__" key, or "constructor" with "prototype" in it/, `tenant_field ${JSON.stringify(field)}`);
      }
      assertError(t, await create({ name: 'bad-provider', embedding_provider: 'acme-embeddings' }), 400, /embedding_provider/, 'unknown provider');
      assertError(t, await create({ name: 'bad-mode', default_search_mode: 'fuzzy' }), 400, /default_search_mode/, 'unknown search mode');
      assertError(t, await create({ name: 'bad-strategy', chunk_strategy: 'sentences' }), 400, /chunk_strategy/, 'unknown chunk strategy');
      assertError(t, await create({ name: 'bad-field', colour: 'blue' }), 400, /colour/, 'unknown field');
      assertError(t, await create({ name: 'bad-topk', default_top_k: 0 }), 400, /default_top_k/, 'top_k 0');
      // Provider clients speak HTTP: another scheme was accepted and failed every query with a 502.
      for (const url of ['file:///etc/passwd', 'ftp://models.example/v1', 'gopher://localhost:70/']) {
        assertError(t, await create({ name: 'bad-base-url', embedding_provider: 'openai_compatible', embedding_model: 'm', dimension: 8, embedding_base_url: url }), 400,
          'body.embedding_base_url must be an http:// or https:// URL', `embedding_base_url ${url}`);
        assertError(t, await create({ name: 'bad-rerank-url', reranking_model: 'openai_compatible/m', reranking_base_url: url }), 400,
          'body.reranking_base_url must be an http:// or https:// URL', `reranking_base_url ${url}`);
      }
      t.equal(await totalCollections(), before, 'no refused create left a collection');
      for (const name of ['a b', 'overlap-eq', 'bad-schema', 'bad-provider', 'bad-field', 'string-schema', 'array-schema', 'empty-segment-0']) {
        t.equal((await get(encodeURIComponent(name))).statusCode, 404, `${name} does not exist`);
      }
      const dotted = await create({ name: 'dotted-tenant', tenant_field: 'org.id', metadata_schema: { type: ['object', 'null'] } });
      t.equal(dotted.statusCode, 201, `a dotted tenant_field and a schema that accepts objects: ${dotted.body}`);
      // Gone again: the list test counts the collections created so far.
      t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/dotted-tenant', headers: admin })).statusCode, 204);
      // Only "constructor" followed by "prototype" is refused: a tenant named by either word alone is carried by queries.
      for (const [index, field] of ['constructor', 'prototype', 'constructor.name', 'prototype.constructor'].entries()) {
        const created = await create({ name: `word-tenant-${index}`, tenant_field: field });
        t.equal(created.statusCode, 201, `tenant_field ${JSON.stringify(field)}: ${created.body}`);
      }
      t.equal((await upload('word-tenant-0', 'lighthouse.txt', TEXT_A, admin, { metadata: JSON.stringify({ constructor: 'acme' }) })).statusCode, 202);
      await waitForIngestion(app, 'word-tenant-0', admin);
      const own = await query('word-tenant-0', { query: 'lighthouse', search_mode: 'keyword', filters: { constructor: 'acme' } });
      t.equal(own.statusCode, 200, own.body);
      t.ok(own.json().total > 0, 'the tenant "constructor" finds its document');
      t.equal((await query('word-tenant-0', { query: 'lighthouse', search_mode: 'keyword', filters: { constructor: 'globex' } })).json().total, 0, 'and another tenant does not');
      for (const index of [0, 1, 2, 3]) t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/word-tenant-${index}`, headers: admin })).statusCode, 204);
      const longest = await create({ name: 'y'.repeat(64) });
      t.equal(longest.statusCode, 201, '64 characters are allowed');
      const small = await create({ name: 'small-chunks', chunk_size: 60 });
      t.equal(small.statusCode, 201, small.body);
      t.ok(small.json().chunk_overlap < 60, 'a default overlap never reaches a small chunk_size');
    });

    await t.test('list: name filter, pagination, {data,total,limit,offset}', async (t) => {
      for (const name of ['alpha-docs', 'Beta-DOCS', 'gamma', 'under_score', 'underXscore']) t.equal((await create({ name })).statusCode, 201);
      const all = (await list('?limit=500')).json();
      t.same(Object.keys(all).sort(), ['data', 'limit', 'offset', 'total']);
      t.equal(all.total, all.data.length);
      t.equal(all.limit, 500);
      t.equal(all.offset, 0);
      t.equal(all.total, 9, 'every collection created so far');
      const defaultPage = (await list()).json();
      t.equal(defaultPage.limit, 50, 'default limit');
      t.equal(defaultPage.offset, 0, 'default offset');

      const docs = (await list('?name=docs')).json();
      t.same(docs.data.map((c: any) => c.name).sort(), ['Beta-DOCS', 'alpha-docs'], 'case-insensitive substring');
      t.equal(docs.total, 2);
      t.same((await list('?name=DoCs')).json().data.map((c: any) => c.name).sort(), ['Beta-DOCS', 'alpha-docs']);
      t.same((await list('?name=under_')).json().data.map((c: any) => c.name), ['under_score'], '"_" is literal, not a wildcard');
      t.same((await list('?name=%25')).json(), { data: [], total: 0, limit: 50, offset: 0 }, '"%" is literal');
      t.same((await list('?name=%3B')).json(), { data: [], total: 0, limit: 50, offset: 0 }, 'a name filter holding ";" is just text');
      t.equal((await list('?name=zzz')).json().total, 0);

      const names = all.data.map((c: any) => c.name);
      const pageOne = (await list('?limit=3&offset=0')).json();
      const pageTwo = (await list('?limit=3&offset=3')).json();
      t.match(pageTwo, { total: 9, limit: 3, offset: 3 });
      t.equal(pageOne.data.length, 3);
      t.equal(pageTwo.data.length, 3);
      t.same([...pageOne.data, ...pageTwo.data].map((c: any) => c.name), names.slice(0, 6), 'pages follow one order');
      const last = (await list('?limit=3&offset=8')).json();
      t.equal(last.data.length, 1);
      t.same((await list('?offset=100')).json().data, []);
      t.equal((await list('?offset=100')).json().total, 9, 'total ignores the page');
      const filteredPage = (await list('?name=docs&limit=1&offset=1')).json();
      t.match(filteredPage, { total: 2, limit: 1, offset: 1 });
      t.equal(filteredPage.data.length, 1);
      assertError(t, await list('?limit=0'), 400, /limit/, 'limit 0');
      assertError(t, await list('?limit=501'), 400, /limit/, 'limit 501');
      assertError(t, await list('?offset=-1'), 400, /offset/, 'negative offset');
      assertError(t, await list('?limit=abc'), 400, /limit/, 'limit not a number');
      assertError(t, await list('?limit=0x2'), 400, /limit must be integer/, 'limit in hexadecimal');
      assertError(t, await list('?offset=1e1'), 400, /offset must be integer/, 'offset with an exponent');
    });

    await t.test('get and 404', async (t) => {
      const response = await get('gamma');
      t.equal(response.statusCode, 200);
      t.match(response.json(), { name: 'gamma', ...CONTRACT_DEFAULTS });
      assertError(t, await get('no-such-collection'), 404, /no-such-collection/, 'unknown collection');
      assertError(t, await get('GAMMA'), 404, undefined, 'names are case-sensitive in paths');
      assertError(t, await patch('no-such-collection', { description: 'x' }), 404, undefined, 'PATCH unknown');
      assertError(t, await app.inject({ method: 'DELETE', url: '/v1/collections/no-such-collection', headers: admin }), 404, undefined, 'DELETE unknown');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/no-such-collection/truncate', headers: admin }), 404, undefined, 'truncate unknown');
      assertError(t, await app.inject({ url: '/v1/collections/no-such-collection/stats', headers: admin }), 404, undefined, 'stats unknown');
      assertError(t, await app.inject({ url: '/v1/collections/no-such-collection/analytics', headers: admin }), 404, undefined, 'analytics unknown');
    });

    await t.test('PATCH: every updatable field; others refused by name, nothing changed', async (t) => {
      t.equal((await create({ name: 'editable', tenant_field: 'org', metadata_schema: { type: 'object' } })).statusCode, 201);
      const updates: Array<Record<string, unknown>> = [
        { description: 'New description' },
        { description: null },
        { metadata: { owner: 'search-team', version: 3 } },
        { chunk_strategy: 'paragraph' },
        { metadata_schema: { type: 'object', required: ['lang'], properties: { lang: { type: 'string' } } } },
        { metadata_schema: null },
        { reranking_enabled: true },
        { reranking_model: 'local' },
        { reranking_base_url: 'http://localhost:8081/v1' },
        { multimodal_enabled: true },
        { multimodal_enrichment_enabled: true },
        { default_top_k: 3 },
        { default_min_score: 0.5 },
        { default_search_mode: 'semantic' },
        { default_search_mode: 'keyword', default_top_k: 4, description: 'several at once' },
      ];
      for (const update of updates) {
        const response = await patch('editable', update);
        t.equal(response.statusCode, 200, `PATCH ${JSON.stringify(update)}: ${response.body.slice(0, 200)}`);
        t.match(response.json(), update, `response shows ${Object.keys(update).join(', ')}`);
        for (const [field, value] of Object.entries(update)) t.same(response.json()[field], value, `${field} is exactly the new value`);
        const stored = (await get('editable')).json();
        for (const [field, value] of Object.entries(update)) t.same(stored[field], value, `${field} persisted`);
      }
      // Query defaults take effect at once (no stale cached answer).
      const ask = async () => (await query('editable', { query: 'anything', filters: { org: 'acme' } })).json();
      t.equal((await patch('editable', { default_search_mode: 'semantic' })).statusCode, 200);
      t.equal((await ask()).search_mode, 'semantic', 'queries follow default_search_mode');
      t.equal((await patch('editable', { default_search_mode: 'keyword' })).statusCode, 200);
      t.equal((await ask()).search_mode, 'keyword', 'and follow its change');
      const afterUpdates = (await get('editable')).json();
      t.ok(Date.parse(afterUpdates.updated_at) >= Date.parse(afterUpdates.created_at));

      const refused: Array<[string, unknown]> = [
        ['dimension', 512], ['chunk_size', 1000], ['chunk_overlap', 10], ['tenant_field', 'team'],
        ['embedding_provider', 'openai'], ['embedding_model', 'other-model'], ['name', 'renamed'],
      ];
      for (const [field, value] of refused) {
        assertError(t, await patch('editable', { [field]: value }), 400, new RegExp(`\\b${field}\\b`), `PATCH ${field}`);
        assertError(t, await patch('editable', { description: 'sneaky', [field]: value }), 400, new RegExp(`\\b${field}\\b`), `PATCH description + ${field}`);
        t.same((await get('editable')).json(), afterUpdates, `nothing changed after refusing ${field}`);
      }
      assertError(t, await patch('editable', { chunk_size: 300 }), 400, /^Field chunk_size cannot be updated: it is fixed when the collection is created \(create another collection to change it\); the updatable fields are description, metadata, embedding_api_key, chunk_strategy, /, 'the detail says what can be updated');
      t.equal((await get('renamed')).statusCode, 404, 'no rename happened');
      assertError(t, await patch('editable', { colour: 'blue' }), 400, /colour/, 'unknown field');
      assertError(t, await patch('editable', { default_top_k: 0 }), 400, /default_top_k/, 'top_k out of range');
      assertError(t, await patch('editable', { default_search_mode: 'fuzzy' }), 400, /default_search_mode/, 'bad search mode');
      assertError(t, await patch('editable', { metadata_schema: { type: 'nonsense' } }), 400, /metadata_schema/, 'invalid schema');
      assertError(t, await patch('editable', { metadata_schema: { type: 'string' } }), 400, /^metadata_schema must accept an object/, 'a schema that excludes objects');
      assertError(t, await patch('editable', { reranking_enabled: 'yes' }), 400, /reranking_enabled/, 'wrong type');
      assertError(t, await patch('editable', { reranking_base_url: 'file:///etc/passwd' }), 400, 'body.reranking_base_url must be an http:// or https:// URL', 'a base URL of another scheme');
      t.same((await get('editable')).json(), afterUpdates, 'refused updates changed nothing');
    });

    await t.test('delete: 204, then 404; its documents and files are gone', async (t) => {
      const created = (await create({ name: 'doomed' })).json();
      const accepted = await upload('doomed', 'lighthouse.txt', TEXT_A);
      t.equal(accepted.statusCode, 202, accepted.body);
      const documentId = accepted.json().id;
      // Over 64 KB: kept as a file, where the small one is kept in the database.
      const large = await upload('doomed', 'large.txt', `${TEXT_A}\n\n`.repeat(Math.ceil(70_000 / TEXT_A.length)));
      t.equal(large.statusCode, 202, large.body);
      const documents = await waitForIngestion(app, 'doomed', admin);
      t.same(documents.map((document) => document.status), ['ready', 'ready']);
      t.equal((await app.inject({ url: `/v1/documents/${documentId}`, headers: admin })).statusCode, 200);
      const stored = await originalsOf(created.id);
      t.equal(stored.length, 2, 'both uploads are stored');
      t.ok(stored.includes(`database:${documentId}`), 'the small one in the database');
      const elementRows = async () => Number((await ctx.services.sql<{ count: string | number }>(
        'select count(*) as count from document_elements where document_id = any(?::uuid[])', [[documentId, large.json().id]],
      ))[0]!.count);
      t.ok(await elementRows() > 0, 'element rows before');
      // A raw vector's chunk belongs to the collection alone, not to a document.
      const raw = await app.inject({
        method: 'POST', url: '/v1/collections/doomed/vectors/upsert', headers: admin,
        payload: { vectors: [{ id: 'raw-1', embedding: Array.from(hashedTextVector('lighthouse keeper lamp', 384)), text: 'lighthouse keeper lamp raw', metadata: {} }] },
      });
      t.equal(raw.statusCode, 200, raw.body);

      const deleted = await app.inject({ method: 'DELETE', url: '/v1/collections/doomed', headers: admin });
      t.equal(deleted.statusCode, 204);
      t.equal(deleted.body, '', '204 has no body');
      assertError(t, await get('doomed'), 404, /doomed/, 'deleted collection');
      assertError(t, await app.inject({ url: `/v1/documents/${documentId}`, headers: admin }), 404, undefined, 'its document');
      assertError(t, await app.inject({ method: 'DELETE', url: '/v1/collections/doomed', headers: admin }), 404, undefined, 'second delete');
      t.same(await originalsOf(created.id), [], 'its files are removed');
      t.equal(await originalRows([documentId]), 0, 'its original rows are removed');
      t.notOk((await list('?limit=500')).json().data.some((c: any) => c.name === 'doomed'), 'not listed');
      const [{ count: chunkRows }] = await ctx.services.sql<{ count: string | number }>('select count(*) as count from chunks where collection_id = ?', [created.id]);
      t.equal(Number(chunkRows), 0, 'no chunk rows remain');
      t.equal(await elementRows(), 0, 'no element rows remain');

      const reborn = await create({ name: 'doomed' });
      t.equal(reborn.statusCode, 201, 'the name is free again');
      t.not(reborn.json().id, created.id);
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const answer = await query('doomed', { query: 'lighthouse keeper', search_mode: mode });
        t.equal(answer.statusCode, 200);
        t.same(answer.json().results, [], `${mode}: the recreated collection does not see old chunks`);
      }
      const stats = (await app.inject({ url: '/v1/collections/doomed/stats', headers: admin })).json();
      t.match(stats, { documents: 0, chunks: 0, vectors: 0 });
    });

    await t.test('truncate: deletes documents, chunks and vectors, keeps the collection', async (t) => {
      const created = (await create({ name: 'trunc' })).json();
      const first = await upload('trunc', 'lighthouse.txt', TEXT_A);
      const second = await upload('trunc', 'bread.txt', TEXT_B);
      t.equal(first.statusCode, 202);
      t.equal(second.statusCode, 202);
      await waitForIngestion(app, 'trunc', admin);
      const raw = await app.inject({
        method: 'POST', url: '/v1/collections/trunc/vectors/upsert', headers: admin,
        payload: { vectors: [{ id: 'raw-1', embedding: Array.from(hashedTextVector('lighthouse keeper lamp', 384)), text: 'lighthouse keeper lamp raw', metadata: {} }] },
      });
      t.equal(raw.statusCode, 200, raw.body);
      const before = (await app.inject({ url: '/v1/collections/trunc/stats', headers: admin })).json();
      t.equal(before.documents, 2);
      t.ok(before.chunks >= 3, 'document chunks and the raw vector');
      t.equal((await query('trunc', { query: 'lighthouse keeper', search_mode: 'keyword' })).json().total > 0, true, 'searchable before');
      t.equal((await originalsOf(created.id)).length, 2, 'two originals stored before');

      const truncated = await app.inject({ method: 'POST', url: '/v1/collections/trunc/truncate', headers: admin });
      t.equal(truncated.statusCode, 200, truncated.body);
      t.same(truncated.json(), { deleted_documents: 2 });
      const kept = await get('trunc');
      t.equal(kept.statusCode, 200, 'the collection is kept');
      t.equal(kept.json().id, created.id, 'same collection');
      t.same((await app.inject({ url: '/v1/collections/trunc/documents', headers: admin })).json(), { data: [], total: 0, limit: 50, offset: 0 });
      assertError(t, await app.inject({ url: `/v1/documents/${first.json().id}`, headers: admin }), 404, undefined, 'a truncated document');
      assertError(t, await app.inject({ url: `/v1/collections/trunc/documents/${first.json().id}/chunks`, headers: admin }), 404, undefined, 'chunks of a truncated document');
      const after = (await app.inject({ url: '/v1/collections/trunc/stats', headers: admin })).json();
      t.match(after, { documents: 0, chunks: 0, vectors: 0, raw_vectors: 0 });
      t.same(await originalsOf(created.id), [], 'uploaded originals are removed');
      t.equal(await originalRows([first.json().id, second.json().id]), 0, 'no original rows remain');
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        for (const text of ['lighthouse keeper', 'sourdough bread']) {
          const answer = await query('trunc', { query: text, search_mode: mode, skip_cache: true });
          t.equal(answer.statusCode, 200);
          t.same(answer.json().results, [], `${mode} "${text}" finds nothing after truncate`);
        }
      }
      const again = await app.inject({ method: 'POST', url: '/v1/collections/trunc/truncate', headers: admin });
      t.same(again.json(), { deleted_documents: 0 }, 'truncating an empty collection');

      const fresh = await upload('trunc', 'bread.txt', TEXT_B);
      t.equal(fresh.statusCode, 202, 'uploads work after truncate');
      const [document] = await waitForIngestion(app, 'trunc', admin);
      t.equal(document?.status, 'ready');
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const answer = (await query('trunc', { query: 'sourdough bread starter', search_mode: mode })).json();
        t.ok(answer.total > 0, `${mode} finds the new document`);
        t.ok(answer.results.every((result: any) => result.document_id === fresh.json().id), `${mode}: only the new document`);
      }
      t.match((await app.inject({ url: '/v1/collections/trunc/stats', headers: admin })).json(), { documents: 1, vectors: document?.chunk_count, chunks: document?.chunk_count });
    });

    await t.test('stats', async (t) => {
      t.equal((await create({ name: 'stats' })).statusCode, 201);
      const empty = (await app.inject({ url: '/v1/collections/stats/stats', headers: admin })).json();
      t.match(empty, { documents: 0, chunks: 0, vectors: 0, storage_bytes: 0 });
      t.same(Object.fromEntries(['tokens', 'texts', 'cache_hits', 'cache_misses', 'cache_hit_ratio', 'cost_usd_estimate'].map((key) => [key, empty.embedding[key]])),
        { tokens: 0, texts: 0, cache_hits: 0, cache_misses: 0, cache_hit_ratio: 0, cost_usd_estimate: 0 }, 'nothing embedded yet: a hit ratio of 0, not a division by 0');
      t.equal((await upload('stats', 'lighthouse.txt', TEXT_A)).statusCode, 202);
      t.equal((await upload('stats', 'bread.txt', TEXT_B)).statusCode, 202);
      const documents = await waitForIngestion(app, 'stats', admin);
      const chunks = documents.reduce((sum, document) => sum + document.chunk_count, 0);
      t.ok(chunks >= 2);
      const response = await app.inject({ url: '/v1/collections/stats/stats', headers: admin });
      t.equal(response.statusCode, 200);
      const stats = response.json();
      t.match(stats, { collection: 'stats', documents: 2, chunks, vectors: chunks, dimension: 384 });
      t.same(stats.documents_by_status, { pending: 0, processing: 0, ready: 2, failed: 0 });
      t.ok(stats.storage_bytes > Buffer.byteLength(TEXT_A) + Buffer.byteLength(TEXT_B), 'storage counts the files and more');

      const names = (await app.inject({ url: '/v1/collections?limit=500', headers: admin })).json().data.map((collection: { name: string }) => collection.name) as string[];
      const each = await Promise.all(names.map(async (name) => (await app.inject({ url: `/v1/collections/${name}/stats`, headers: admin })).json()));
      const sum = (field: string) => each.reduce((total, row) => total + row.storage[field], 0);
      const instance = (await app.inject({ url: '/v1/stats', headers: admin })).json();
      t.same(instance.storage, { files_bytes: sum('files_bytes'), chunk_text_bytes: sum('chunk_text_bytes'), vector_bytes: sum('vector_bytes') }, '/v1/stats counts storage as collection stats do');
      t.equal(instance.storage_bytes, each.reduce((total, row) => total + row.storage_bytes, 0));
      if (backend === 'postgresql') {
        // The HNSW indexes of this test's database (one a collection with vectors) against the server's cache.
        const [expected] = await ctx.services.sql<{ index_bytes: string | number; cache_bytes: string | number }>(
          `select (select sum(pg_relation_size(indexrelid)) from pg_stat_user_indexes where starts_with(indexrelname, 'pgvector_hnsw_')) as index_bytes,
                  (select setting::bigint * pg_size_bytes(unit) from pg_settings where name = 'shared_buffers') as cache_bytes`,
        );
        t.ok(Number(expected!.index_bytes) > 0, 'the collections with vectors have HNSW indexes');
        t.same(instance.vector_index_cache, { index_bytes: Number(expected!.index_bytes), shared_buffers_bytes: Number(expected!.cache_bytes) },
          '/v1/stats tells how large pgvector\'s indexes are against shared_buffers');
      }
      else t.equal(instance.vector_index_cache, undefined, 'the embedded database has no shared_buffers to tell of');
    });

    await t.test('analytics', async (t) => {
      t.equal((await create({ name: 'analytics' })).statusCode, 201);
      t.equal((await upload('analytics', 'lighthouse.txt', TEXT_A)).statusCode, 202);
      await waitForIngestion(app, 'analytics', admin);
      const empty = (await app.inject({ url: '/v1/collections/analytics/analytics', headers: admin })).json();
      t.match(empty, { queries_total: 0, queries_per_day: [], top_queries: [], zero_result_queries: [], window_days: 30 });
      t.same([empty.avg_latency_ms, empty.cache_hit_ratio, empty.zero_result_queries_total], [0, 0, 0], 'no queries: averages and ratios are 0, not a division by 0');

      // Case and white space apart, a query is counted as one, and shown as it was asked most often.
      const asked: Array<[string, string]> = [
        ['lighthouse', 'keyword'], ['Lighthouse ', 'keyword'], ['lighthouse', 'hybrid'],
        ['storms \t ships', 'keyword'], ['qwertyzz', 'keyword'], ['qwertyzz', 'keyword'], [' QWERTYZZ', 'keyword'],
      ];
      const latencies: number[] = [];
      for (const [text, mode] of asked) {
        const answer = await query('analytics', { query: text, search_mode: mode });
        t.equal(answer.statusCode, 200);
        latencies.push(answer.json().timings.total_ms);
      }
      const meanLatency = latencies.reduce((sum, latency) => sum + latency, 0) / latencies.length;
      const response = await app.inject({ url: '/v1/collections/analytics/analytics', headers: admin });
      t.equal(response.statusCode, 200, response.body);
      const analytics = response.json();
      t.equal(analytics.queries_total, 7);
      t.equal(analytics.window_days, 30);
      const today = new Date();
      const dayStart = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate())).toISOString();
      t.equal(analytics.queries_per_day.length, 1);
      t.match(analytics.queries_per_day[0], { date: dayStart, queries: 7 });
      t.same(analytics.top_queries.map((row: any) => [row.query, row.count]), [['lighthouse', 3], ['qwertyzz', 3], ['storms ships', 1]]);
      t.same(analytics.zero_result_queries.map((row: any) => [row.query, row.count]), [['qwertyzz', 3]]);
      // Each query is counted with the total its response gave (the cached one unrounded, hence the margin).
      t.ok(meanLatency > 0.05, `the queries took time: ${latencies}`);
      t.ok(Math.abs(analytics.avg_latency_ms - meanLatency) <= 0.02, `avg_latency_ms ${analytics.avg_latency_ms} is the mean of ${latencies}`);
      t.ok(Math.abs(analytics.queries_per_day[0].avg_latency_ms - meanLatency) <= 0.02, 'and so is the day\'s');
      t.equal(analytics.cache_hit_ratio, 0.14, 'the second "qwertyzz" keyword query came from the cache: 1 of 7');
      t.equal((await app.inject({ url: '/v1/collections/stats/analytics', headers: admin })).json().queries_total, 0, 'analytics are per collection');

      // jsonb refuses NUL and half a surrogate pair; such a query must not stop analytics for good.
      const cut = `${'x'.repeat(1999)}\u{1F600} tail`;
      for (const text of [cut, 'nul \u0000 byte', 'lone \uD83D half', 'lone \uDE00 low half']) t.equal((await query('analytics', { query: text, search_mode: 'keyword' })).statusCode, 200);
      t.equal((await query('analytics', { query: 'after the odd ones', search_mode: 'keyword' })).statusCode, 200);
      const later = await app.inject({ url: '/v1/collections/analytics/analytics', headers: admin });
      t.equal(later.statusCode, 200, later.body);
      t.equal(later.json().queries_total, 12, 'the odd queries and the one after them are all counted');
      t.ok(later.json().top_queries.some((row: any) => row.query === 'nul byte'), 'NUL is dropped from the recorded text');
      t.ok(later.json().top_queries.some((row: any) => row.query === 'lone \uFFFD half') && later.json().top_queries.some((row: any) => row.query === 'lone \uFFFD low half'),
        'half a surrogate pair, the first half or the second, is recorded as U+FFFD');

      for (const days of [1, 365]) {
        const ok = await app.inject({ url: `/v1/collections/analytics/analytics?window_days=${days}`, headers: admin });
        t.equal(ok.statusCode, 200);
        t.equal(ok.json().window_days, days);
        t.equal(ok.json().queries_total, 12);
      }
      for (const days of ['0', '366', '-1', 'abc', '1.5']) {
        assertError(t, await app.inject({ url: `/v1/collections/analytics/analytics?window_days=${days}`, headers: admin }), 400, /window_days/, `window_days=${days}`);
      }
    });

    await t.test('a key pinned to collection A sees and creates only A', async (t) => {
      t.equal((await create({ name: 'pin-b' })).statusCode, 201);
      t.equal((await upload('pin-b', 'bread.txt', TEXT_B)).statusCode, 202);
      await waitForIngestion(app, 'pin-b', admin);
      // A key is pinned to a collection that exists (404 otherwise).
      t.equal((await create({ name: 'pin-a' })).statusCode, 201);
      const pinned = bearer((await createApiKey(app, cookie, { name: 'pinned', collection: 'pin-a' })).key);
      const refusal = 'API key is pinned to collection pin-a';

      assertError(t, await create({ name: 'pin-other' }, pinned), 403, refusal, 'create another collection');
      t.equal((await get('pin-other')).statusCode, 404, 'not created');
      assertError(t, await create({ name: 'pin-a' }, pinned), 409, 'Collection pin-a already exists', 'its own collection exists already');
      t.equal((await upload('pin-a', 'lighthouse.txt', TEXT_A, pinned)).statusCode, 202, 'upload into A');
      await waitForIngestion(app, 'pin-a', pinned);
      const listed = (await list('', pinned)).json();
      t.same(listed.data.map((c: any) => c.name), ['pin-a'], 'list shows only A');
      t.equal(listed.total, 1);
      t.same((await list('?name=pin-b', pinned)).json(), { data: [], total: 0, limit: 50, offset: 0 }, 'a name filter cannot reach B');
      t.same((await list('?name=PIN', pinned)).json().data.map((c: any) => c.name), ['pin-a'], 'a name filter matching A keeps A');
      t.equal((await get('pin-a', pinned)).statusCode, 200);
      const ownQuery = await query('pin-a', { query: 'lighthouse' }, pinned);
      t.equal(ownQuery.statusCode, 200);
      t.ok(ownQuery.json().total > 0);

      assertError(t, await get('pin-b', pinned), 403, refusal, 'get B');
      assertError(t, await query('pin-b', { query: 'bread' }, pinned), 403, refusal, 'query B');
      assertError(t, await upload('pin-b', 'x.txt', 'text', pinned), 403, refusal, 'upload to B');
      assertError(t, await patch('pin-b', { description: 'x' }, pinned), 403, refusal, 'update B');
      assertError(t, await app.inject({ url: '/v1/collections/pin-b/stats', headers: pinned }), 403, refusal, 'stats of B');
      assertError(t, await app.inject({ url: '/v1/collections/pin-b/documents', headers: pinned }), 403, refusal, 'documents of B');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/pin-b/truncate', headers: pinned }), 403, refusal, 'truncate B');
      assertError(t, await app.inject({ method: 'DELETE', url: '/v1/collections/pin-b', headers: pinned }), 403, refusal, 'delete B');
      assertError(t, await get('no-such', pinned), 403, refusal, 'an unknown collection is refused, not revealed');
      const b = (await app.inject({ url: '/v1/collections/pin-b/documents', headers: admin })).json();
      t.equal(b.total, 1, 'B kept its document');
      t.equal((await get('pin-b')).json().description, null, 'B unchanged');
    });
  });
}
