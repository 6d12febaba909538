import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import {
  adminTestApp, bearer, buildTestApp, createApiKey, createTestCollection, multipartUpload, setupAdmin, type TestApp, testBackends, waitForIngestion,
} from '../support/test-app.js';
import { assertError } from '../support/assertions.js';
import { storedOriginals } from '../support/stored-originals.js';


/** Like `multipartUpload`, but the fields come after the file, so the file is stored before they are read. */
function multipartFileFirst(file: { filename: string; content: string | Buffer; contentType?: string }, fields: Record<string, string>) {
  const boundary = `----rs${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.filename}"\r\nContent-Type: ${file.contentType ?? 'text/plain'}\r\n\r\n`),
    Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content),
    Buffer.from('\r\n'),
  ];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const TEXT = 'Lighthouse keepers maintained the lamp every night.\n\nThe keeper logbook recorded storms and passing ships.';

const MARKDOWN = [
  '# Guide',
  '',
  'Intro paragraph about the widget.',
  '',
  '## Install',
  '',
  'Run the installer before first use.',
  '',
  '- download the package',
  '- run setup',
  '',
  '| option | default |',
  '|---|---|',
  '| color | blue |',
  '',
  '```js',
  'console.log("hello widget")',
  '```',
  '',
].join('\n');

const HTML = `<!doctype html><html><head><title>Sample Page</title><style>p { color: red }</style></head><body>
<nav>Home | About</nav>
<h1>Gadgets</h1><p>Gadgets are small and useful.</p>
<h2>Usage</h2>
<ul><li>open the lid</li><li>close the lid</li></ul>
<table><tr><th>size</th><th>weight</th></tr><tr><td>small</td><td>light</td></tr></table>
<pre><code class="language-sh">make build</code></pre>
</body></html>`;

const UPLOAD_METADATA = { source: 'wiki', lang: 'en', year: 2024, tags: ['a', 'b'] };

/** A long text of numbered paragraphs, for several chunks. */
const LONG_TEXT = Array.from({ length: 12 }, (_, index) => `Paragraph ${index + 1} describes tidal pools, barnacles and anemones in some detail.`).join('\n\n');

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, cookie, admin } = ctx;

    const createCollection = (payload: Record<string, unknown>) => createTestCollection(app, admin, payload);
    const send = (name: string, body: { payload: Buffer; headers: Record<string, string> }, headers: Record<string, string> = admin) =>
      app.inject({ method: 'POST', url: `/v1/collections/${name}/documents`, headers: { ...headers, ...body.headers }, payload: body.payload });
    const upload = (name: string, filename: string, content: string | Buffer, contentType: string, metadata?: unknown, headers: Record<string, string> = admin) =>
      send(name, multipartUpload([{ filename, content, contentType }], metadata === undefined ? {} : { metadata: typeof metadata === 'string' ? metadata : JSON.stringify(metadata) }), headers);
    const getDocument = (name: string, id: string) => app.inject({ url: `/v1/collections/${name}/documents/${id}`, headers: admin });
    const listDocuments = (name: string, query = '') => app.inject({ url: `/v1/collections/${name}/documents${query}`, headers: admin });
    const documentCount = async (name: string) => (await listDocuments(name)).json().total as number;
    const query = (name: string, payload: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload });
    const stats = async (name: string) => (await app.inject({ url: `/v1/collections/${name}/stats`, headers: admin })).json();
    const originalsOf = (target: TestApp, collectionId: string) => storedOriginals(target.services, collectionId);

    const docs = await createCollection({ name: 'docs' });
    const ids: Record<string, string> = {};

    await t.test('upload .txt, .md and .html: 202 pending, then ready', async (t) => {
      const uploads: Array<[string, string, string, string, Record<string, unknown> | undefined]> = [
        ['notes.txt', TEXT, 'text/plain', 'text/plain', undefined],
        ['guide.md', MARKDOWN, 'text/markdown', 'text/markdown', UPLOAD_METADATA],
        ['page.html', HTML, 'application/octet-stream', 'text/html', { source: 'web' }],
      ];
      for (const [filename, content, sentType, recordedType, metadata] of uploads) {
        const response = await upload('docs', filename, content, sentType, metadata);
        t.equal(response.statusCode, 202, `${filename}: ${response.body}`);
        const document = response.json();
        t.match(document, {
          collection: 'docs', filename, content_type: recordedType, size_bytes: Buffer.byteLength(content), status: 'pending',
          error: null, chunk_count: 0, metadata: metadata ?? {}, progress: { percent: 0, message: String },
        });
        t.match(document.id, /^[0-9a-f-]{36}$/);
        t.match(document.sha256, /^[0-9a-f]{64}$/);
        ids[filename] = document.id;
        await sleep(5); // distinct created_at values for the sort checks
      }
      const stored = await originalsOf(ctx, docs.id);
      t.same(stored, Object.values(ids).map((id) => `database:${id}`), 'three originals stored, in the database (each is under 64 KB)');
      const documents = await waitForIngestion(app, 'docs', admin);
      t.equal(documents.length, 3);
      for (const filename of Object.keys(ids)) {
        const response = await getDocument('docs', ids[filename]!);
        t.equal(response.statusCode, 200);
        const document = response.json();
        t.match(document, { id: ids[filename], status: 'ready', error: null, progress: { percent: 100, message: String } }, `${filename} is ready`);
        t.ok(document.chunk_count > 0, `${filename} has chunks`);
        t.ok(Date.parse(document.processed_at), `${filename} has processed_at`);
      }
      t.equal((await getDocument('docs', ids['guide.md']!)).json().title, 'Guide', 'Markdown title is the first h1');
      t.equal((await getDocument('docs', ids['page.html']!)).json().title, 'Sample Page', 'HTML title is <title>');
    });

    await t.test('prose that happens to match a transport-stream signature is accepted as the text it is named', async (t) => {
      await createCollection({ name: 'prose' });
      // "G" at offsets 0 and 188 is all file-type needs to call data an MPEG transport stream.
      const prose = `Gardens ${'grow slowly in the shade of old walls. '.repeat(5).slice(0, 180)}Gravel paths wind between the beds and the pond.`;
      const response = await upload('prose', 'garden.txt', prose, 'text/plain');
      t.equal(response.statusCode, 202, response.body);
      const [document] = await waitForIngestion(app, 'prose', admin);
      t.match(document, { status: 'ready', content_type: 'text/plain' });
    });

    await t.test('elements: types in order with heading paths', async (t) => {
      const markdown = await app.inject({ url: `/v1/collections/docs/documents/${ids['guide.md']}/elements`, headers: admin });
      t.equal(markdown.statusCode, 200);
      const body = markdown.json();
      t.match(body, { total: 7, limit: 50, offset: 0 });
      t.same(body.data.map((element: any) => [element.element_index, element.type, element.text, element.heading_path]), [
        [0, 'heading', 'Guide', []],
        [1, 'paragraph', 'Intro paragraph about the widget.', ['Guide']],
        [2, 'heading', 'Install', ['Guide']],
        [3, 'paragraph', 'Run the installer before first use.', ['Guide', 'Install']],
        [4, 'list', '- download the package\n- run setup', ['Guide', 'Install']],
        [5, 'table', 'option | default\ncolor | blue', ['Guide', 'Install']],
        [6, 'code', 'console.log("hello widget")', ['Guide', 'Install']],
      ]);
      t.match(body.data[0].metadata, { level: 1 });
      t.match(body.data[2].metadata, { level: 2 });
      t.match(body.data[6].metadata, { language: 'js' });
      t.ok(body.data.every((element: any) => element.document_id === ids['guide.md']));

      const paged = (await app.inject({ url: `/v1/collections/docs/documents/${ids['guide.md']}/elements?limit=2&offset=3`, headers: admin })).json();
      t.match(paged, { total: 7, limit: 2, offset: 3 });
      t.same(paged.data.map((element: any) => element.type), ['paragraph', 'list']);

      const html = (await app.inject({ url: `/v1/collections/docs/documents/${ids['page.html']}/elements`, headers: admin })).json();
      t.same(html.data.map((element: any) => [element.type, element.text, element.heading_path]), [
        ['heading', 'Gadgets', []],
        ['paragraph', 'Gadgets are small and useful.', ['Gadgets']],
        ['heading', 'Usage', ['Gadgets']],
        ['list', '- open the lid\n- close the lid', ['Gadgets', 'Usage']],
        ['table', 'size | weight\nsmall | light', ['Gadgets', 'Usage']],
        ['code', 'make build', ['Gadgets', 'Usage']],
      ], 'HTML: nav and style skipped, structure kept');

      const text = (await app.inject({ url: `/v1/collections/docs/documents/${ids['notes.txt']}/elements`, headers: admin })).json();
      t.same(text.data.map((element: any) => [element.type, element.text]), [
        ['paragraph', 'Lighthouse keepers maintained the lamp every night.'],
        ['paragraph', 'The keeper logbook recorded storms and passing ships.'],
      ]);
      assertError(t, await app.inject({ url: `/v1/collections/docs/documents/${ids['guide.md']}/elements?limit=0`, headers: admin }), 400, /limit/, 'elements limit 0');
    });

    await t.test('chunks: heading_path and upload metadata on every chunk; limit/offset', async (t) => {
      const response = await app.inject({ url: `/v1/collections/docs/documents/${ids['guide.md']}/chunks`, headers: admin });
      t.equal(response.statusCode, 200);
      const chunks = response.json();
      const document = (await getDocument('docs', ids['guide.md']!)).json();
      t.equal(chunks.total, document.chunk_count);
      t.same(chunks.data.map((chunk: any) => chunk.metadata.heading_path), [['Guide'], ['Guide', 'Install']], 'a chunk per section, with its heading path');
      t.match(chunks.data[1].text, /^Install\n\nRun the installer/);
      for (const chunk of chunks.data) {
        t.match(chunk.metadata, UPLOAD_METADATA, `chunk ${chunk.chunk_index} carries the upload metadata`);
        t.equal(chunk.document_id, ids['guide.md']);
      }
      const html = (await app.inject({ url: `/v1/collections/docs/documents/${ids['page.html']}/chunks`, headers: admin })).json();
      t.ok(html.data.every((chunk: any) => chunk.metadata.source === 'web'), 'HTML chunks carry their metadata');
      t.same(html.data[0].metadata.heading_path, ['Gadgets']);

      // Upload metadata named like the chunk's own keys wins on every chunk: the caller finds what it sent.
      const named = await upload('docs', 'named.md', '# Title\n\nKestrels hover over the verge.\n\n## Later\n\nThey dive.', 'text/markdown', { heading_path: 'mine', page: 3 });
      t.equal(named.statusCode, 202);
      await waitForIngestion(app, 'docs', admin);
      const namedChunks = (await app.inject({ url: `/v1/collections/docs/documents/${named.json().id}/chunks`, headers: admin })).json();
      t.ok(namedChunks.total >= 1);
      t.ok(namedChunks.data.every((chunk: any) => chunk.metadata.heading_path === 'mine' && chunk.metadata.page === 3), 'heading_path and page as uploaded');
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const found = (await app.inject({ method: 'POST', url: '/v1/collections/docs/query', headers: admin, payload: { query: 'kestrels hover', search_mode: mode, filters: { heading_path: 'mine', page: 3 }, skip_cache: true } })).json();
        t.ok(found.results.length > 0 && found.results.every((result: any) => result.document_id === named.json().id), `${mode}: found by the uploaded values`);
      }
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/docs/documents/${named.json().id}`, headers: admin })).statusCode, 204);

      // A chunk that runs from one subsection into the next is about the one holding most of its text.
      const schedule = ['## Options', '', 'The widget reads its options at start.', '', '### Schedule', '', '| Version | Date | Notes |', '| --- | --- | --- |',
        ...Array.from({ length: 6 }, (_, index) => `| 1.${index} | 202${index} | maintenance release |`)].join('\n');
      const spanning = await upload('docs', 'schedule.md', schedule, 'text/markdown');
      await waitForIngestion(app, 'docs', admin);
      const spanningChunks = (await app.inject({ url: `/v1/collections/docs/documents/${spanning.json().id}/chunks`, headers: admin })).json();
      t.same(spanningChunks.data.map((chunk: any) => [chunk.text.slice(0, 7), chunk.metadata.heading_path]), [['Options', ['Options', 'Schedule']]]);
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/docs/documents/${spanning.json().id}`, headers: admin })).statusCode, 204);

      const small = await createCollection({ name: 'small-chunks', chunk_size: 120, chunk_overlap: 0 });
      const long = await upload('small-chunks', 'tides.txt', LONG_TEXT, 'text/plain', { source: 'field-notes' });
      t.equal(long.statusCode, 202);
      const [longDocument] = await waitForIngestion(app, 'small-chunks', admin);
      t.equal(longDocument?.status, 'ready');
      t.ok(longDocument!.chunk_count >= 6, `several chunks (${longDocument?.chunk_count})`);
      const all = (await app.inject({ url: `/v1/collections/small-chunks/documents/${long.json().id}/chunks?limit=500`, headers: admin })).json();
      t.equal(all.total, longDocument!.chunk_count);
      t.same(all.data.map((chunk: any) => chunk.chunk_index), [...Array(longDocument!.chunk_count).keys()], 'ordered by chunk_index');
      t.ok(all.data.every((chunk: any) => chunk.text.length <= 120), 'chunks respect chunk_size');
      t.ok(all.data.every((chunk: any) => chunk.metadata.source === 'field-notes'));
      const paged = (await app.inject({ url: `/v1/collections/small-chunks/documents/${long.json().id}/chunks?limit=2&offset=1`, headers: admin })).json();
      t.match(paged, { total: longDocument!.chunk_count, limit: 2, offset: 1 });
      t.same(paged.data.map((chunk: any) => chunk.id), all.data.slice(1, 3).map((chunk: any) => chunk.id));
      const beyond = (await app.inject({ url: `/v1/collections/small-chunks/documents/${long.json().id}/chunks?offset=1000`, headers: admin })).json();
      t.same(beyond.data, []);
      t.equal(beyond.total, longDocument!.chunk_count);
      t.equal(small.name, 'small-chunks');
      assertError(t, await app.inject({ url: `/v1/collections/docs/documents/${long.json().id}/chunks`, headers: admin }), 404, undefined, 'a document of another collection');
    });

    await t.test('upload metadata appears on query results in every mode', async (t) => {
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const response = await query('docs', { query: 'installer widget package', search_mode: mode });
        t.equal(response.statusCode, 200);
        const results = response.json().results.filter((result: any) => result.document_id === ids['guide.md']);
        t.ok(results.length > 0, `${mode}: the guide is found`);
        for (const result of results) {
          t.match(result.metadata, UPLOAD_METADATA, `${mode}: result carries the upload metadata`);
          t.ok(Array.isArray(result.metadata.heading_path), `${mode}: and its heading path`);
        }
      }
      const filtered = (await query('docs', { query: 'widget gadgets lighthouse', search_mode: 'keyword', filters: { source: 'wiki' } })).json();
      t.ok(filtered.total > 0);
      t.ok(filtered.results.every((result: any) => result.document_id === ids['guide.md']), 'upload metadata is filterable');
    });

    await t.test('list documents: q, status, sort, order, limit/offset', async (t) => {
      const list = async (query: string) => {
        const response = await listDocuments('docs', query);
        t.equal(response.statusCode, 200, `${query}: ${response.body.slice(0, 200)}`);
        return response.json();
      };
      const names = (body: any) => body.data.map((document: any) => document.filename);
      const all = await list('');
      t.match(all, { total: 3, limit: 50, offset: 0 });
      t.same(names(all), ['page.html', 'guide.md', 'notes.txt'], 'default order: newest first');
      t.same(names(await list('?q=notes')), ['notes.txt']);
      t.same(names(await list('?q=NOTES')), ['notes.txt'], 'q is case-insensitive');
      t.same(names(await list('?q=.htm')), ['page.html'], 'q matches a filename substring');
      t.same(names(await list('?q=_')), [], '"_" is literal');
      t.equal((await list('?q=zzz')).total, 0);
      t.equal((await list('?status=ready')).total, 3);
      t.same((await list('?status=pending')).data, []);
      t.equal((await list('?status=failed')).total, 0);
      t.same(names(await list('?sort=filename')), ['page.html', 'guide.md', 'notes.txt'].sort().reverse(), 'sort alone keeps the default order desc');
      t.same(names(await list('?sort=filename&order=asc')), ['guide.md', 'notes.txt', 'page.html']);
      t.same(names(await list('?sort=filename&order=desc')), ['page.html', 'notes.txt', 'guide.md']);
      const bySize = Object.entries({ 'notes.txt': TEXT, 'guide.md': MARKDOWN, 'page.html': HTML })
        .sort((a, b) => Buffer.byteLength(a[1]) - Buffer.byteLength(b[1])).map(([name]) => name);
      t.same(names(await list('?sort=size_bytes&order=asc')), bySize);
      t.same(names(await list('?sort=size_bytes&order=desc')), [...bySize].reverse());
      t.same(names(await list('?sort=created_at&order=asc')), ['notes.txt', 'guide.md', 'page.html']);
      const paged = await list('?sort=filename&order=asc&limit=1&offset=1');
      t.match(paged, { total: 3, limit: 1, offset: 1 });
      t.same(names(paged), ['notes.txt']);
      t.same(names(await list('?q=t&sort=filename&order=asc&limit=1&offset=1')), ['page.html'], 'filter, sort and page together');
      const filtered = (filter: unknown, extra = '') => list(`?filters=${encodeURIComponent(JSON.stringify(filter))}${extra}`);
      t.same(names(await filtered({ source: 'web' })), ['page.html'], 'filters: the upload metadata, as queries filter it');
      t.same(names(await filtered({ source: { $exists: true } }, '&sort=filename&order=asc')), ['guide.md', 'page.html']);
      t.same(names(await filtered({ $not: { source: 'web' } }, '&sort=filename&order=asc')), ['guide.md', 'notes.txt']);
      t.match(await filtered({ source: { $in: ['web', 'wiki'] } }, '&q=page'), { total: 1 }, 'with q');
      await createCollection({ name: 'odd-keys' });
      t.equal((await upload('odd-keys', 'a.txt', 'odd keys', 'text/plain', { team: { 'na"me\\x': 'ops' } })).statusCode, 202);
      const oddKey = async (value: string) => (await listDocuments('odd-keys', `?filters=${encodeURIComponent(JSON.stringify({ 'team.na"me\\x': value }))}`)).json().total;
      t.same([await oddKey('ops'), await oddKey('dev')], [1, 0], 'a key with a quote and a backslash is matched exactly');
      assertError(t, await listDocuments('docs', '?filters={source'), 400, /^filters must be a JSON object/, 'not JSON');
      assertError(t, await listDocuments('docs', `?filters=${encodeURIComponent('{"source":{"$regex":"w"}}')}`), 400, /\$regex/, 'unknown operator');
      assertError(t, await listDocuments('docs', '?status=done'), 400, /status/, 'unknown status');
      assertError(t, await listDocuments('docs', '?sort=colour'), 400, /sort/, 'unknown sort field');
      assertError(t, await listDocuments('docs', '?order=up'), 400, /order/, 'unknown order');
      assertError(t, await listDocuments('docs', '?limit=501'), 400, /limit/, 'limit 501');
      assertError(t, await listDocuments('nope', ''), 404, /nope/, 'unknown collection');
    });

    await t.test('get a document; 404 and 400 for bad ids', async (t) => {
      const response = await getDocument('docs', ids['notes.txt']!);
      t.equal(response.statusCode, 200);
      t.match(response.json(), { id: ids['notes.txt'], filename: 'notes.txt', collection: 'docs', status: 'ready' });
      assertError(t, await getDocument('docs', '00000000-0000-4000-8000-000000000000'), 404, /00000000-0000-4000-8000-000000000000/, 'unknown document');
      assertError(t, await getDocument('small-chunks', ids['notes.txt']!), 404, undefined, 'a document of another collection');
      assertError(t, await getDocument('docs', 'not-a-uuid'), 400, undefined, 'not a uuid');
    });

    await t.test('global GET /v1/documents/{id} and the pin', async (t) => {
      const id = ids['notes.txt']!;
      const inCollection = (await getDocument('docs', id)).json();
      const viaAdmin = await app.inject({ url: `/v1/documents/${id}`, headers: admin });
      t.equal(viaAdmin.statusCode, 200);
      t.same(viaAdmin.json(), inCollection, 'the same record as the collection route');
      const reader = bearer((await createApiKey(app, cookie, { name: 'reader', scopes: ['document:read'] })).key);
      const viaKey = await app.inject({ url: `/v1/documents/${id}`, headers: reader });
      t.equal(viaKey.statusCode, 200);
      t.equal(viaKey.json().collection, 'docs');
      assertError(t, await app.inject({ url: '/v1/documents/00000000-0000-4000-8000-000000000000', headers: reader }), 404, undefined, 'unknown id');
      assertError(t, await app.inject({ url: '/v1/documents/nope', headers: reader }), 400, undefined, 'not a uuid');
      const elsewhere = bearer((await createApiKey(app, cookie, { name: 'elsewhere', collection: 'small-chunks' })).key);
      assertError(t, await app.inject({ url: `/v1/documents/${id}`, headers: elsewhere }), 403, 'API key is pinned to collection small-chunks', 'pinned to another collection');
      const here = bearer((await createApiKey(app, cookie, { name: 'here', collection: 'docs', scopes: ['document:read'] })).key);
      const pinnedHere = await app.inject({ url: `/v1/documents/${id}`, headers: here });
      t.equal(pinnedHere.statusCode, 200, 'pinned to the owning collection');
      t.equal(pinnedHere.json().id, id);
      const querier = bearer((await createApiKey(app, cookie, { name: 'querier', scopes: ['query:read'] })).key);
      assertError(t, await app.inject({ url: `/v1/documents/${id}`, headers: querier }), 403, 'API key missing required scope: document:read', 'scope missing');
      const uploader = bearer((await createApiKey(app, cookie, { name: 'uploader', scopes: ['document:read'] })).key);
      assertError(t, await upload('docs', 'x.txt', 'text', 'text/plain', undefined, uploader), 403, 'API key missing required scope: document:upload', 'upload without document:upload');
    });

    await t.test('delete a document: 204, gone from every query mode, stats drop', async (t) => {
      const accepted = await upload('docs', 'ephemeral.txt', 'Zebrafish and quokka notes.\n\nThe quokka smiles at the zebrafish tank.', 'text/plain', { source: 'temp' });
      t.equal(accepted.statusCode, 202);
      const id = accepted.json().id;
      await waitForIngestion(app, 'docs', admin);
      const document = (await getDocument('docs', id)).json();
      t.equal(document.status, 'ready');
      const before = await stats('docs');
      const found = async (mode: string) => {
        const response = await query('docs', { query: 'zebrafish quokka', search_mode: mode, skip_cache: true });
        t.equal(response.statusCode, 200);
        return response.json().results.filter((result: any) => result.document_id === id).length;
      };
      for (const mode of ['semantic', 'keyword', 'hybrid']) t.ok(await found(mode) > 0, `${mode} finds it before`);
      const originalsBefore = (await originalsOf(ctx, docs.id)).length;
      const partRows = async () => {
        const [counts] = await ctx.services.sql<{ chunks: string | number; elements: string | number }>(
          'select (select count(*) from chunks where document_id = ?) as chunks, (select count(*) from document_elements where document_id = ?) as elements', [id, id],
        );
        return { chunks: Number(counts!.chunks), elements: Number(counts!.elements) };
      };
      t.ok((await partRows()).elements > 0, 'element rows before');

      const deleted = await app.inject({ method: 'DELETE', url: `/v1/collections/docs/documents/${id}`, headers: admin });
      t.equal(deleted.statusCode, 204);
      t.equal(deleted.body, '');
      assertError(t, await getDocument('docs', id), 404, undefined, 'deleted document');
      assertError(t, await app.inject({ url: `/v1/documents/${id}`, headers: admin }), 404, undefined, 'deleted document, global');
      assertError(t, await app.inject({ url: `/v1/collections/docs/documents/${id}/chunks`, headers: admin }), 404, undefined, 'its chunks');
      assertError(t, await app.inject({ method: 'DELETE', url: `/v1/collections/docs/documents/${id}`, headers: admin }), 404, undefined, 'second delete');
      for (const mode of ['semantic', 'keyword', 'hybrid']) t.equal(await found(mode), 0, `${mode} no longer finds it`);
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const cachedPath = (await query('docs', { query: 'zebrafish quokka', search_mode: mode })).json();
        t.notOk(cachedPath.results.some((result: any) => result.document_id === id), `${mode} without skip_cache does not serve it from the cache`);
      }
      const after = await stats('docs');
      t.equal(after.documents, before.documents - 1, 'documents drop');
      t.equal(after.chunks, before.chunks - document.chunk_count, 'chunks drop');
      t.equal(after.vectors, before.vectors - document.chunk_count, 'vectors drop');
      t.ok(after.storage_bytes < before.storage_bytes, 'storage drops');
      t.equal((await originalsOf(ctx, docs.id)).length, originalsBefore - 1, 'its original is removed');
      t.same(await partRows(), { chunks: 0, elements: 0 }, 'no chunk or element rows are left');
      const deleter = bearer((await createApiKey(app, cookie, { name: 'deleter', scopes: ['document:read'] })).key);
      assertError(t, await app.inject({ method: 'DELETE', url: `/v1/collections/docs/documents/${ids['notes.txt']}`, headers: deleter }), 403, 'API key missing required scope: document:delete', 'delete without scope');
      t.equal((await getDocument('docs', ids['notes.txt']!)).statusCode, 200, 'still there');
    });

    await t.test('refused uploads leave nothing half-written', async (t) => {
      const refusals = await createCollection({ name: 'refusals' });
      const nothingWritten = async (what: string) => {
        t.equal(await documentCount('refusals'), 0, `${what}: no document`);
        t.same(await originalsOf(ctx, refusals.id), [], `${what}: no stored original`);
      };
      assertError(t, await send('refusals', multipartUpload([], { metadata: '{}' })), 400, /file/, 'no file part');
      await nothingWritten('no file part');
      assertError(t, await send('refusals', multipartUpload([{ filename: 'a.txt', content: 'hello', contentType: 'text/plain', field: 'upload' }])), 400, /file/, 'file in another part');
      await nothingWritten('file in another part');
      assertError(t, await send('refusals', multipartUpload([
        { filename: 'a.txt', content: 'first file', contentType: 'text/plain' },
        { filename: 'b.txt', content: 'second file', contentType: 'text/plain' },
      ])), 400, /one file/, 'two files');
      await nothingWritten('two files');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/refusals/documents', headers: admin, payload: { file: 'hello' } }), 415, undefined, 'JSON body');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/refusals/documents', headers: { ...admin, 'content-type': 'text/plain' }, payload: 'hello' }), 415, undefined, 'text/plain body');
      await nothingWritten('non-multipart');
      const exe = await upload('refusals', 'x.exe', Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03]), 'application/x-msdownload');
      assertError(t, exe, 415, /\.txt.*\.md.*\.html|\.html.*\.md.*\.txt/s, 'unsupported type');
      t.match(exe.json().detail, /text\/plain/, 'lists supported content types');
      t.match(exe.json().detail, /text\/markdown/);
      t.match(exe.json().detail, /text\/html/);
      await nothingWritten('unsupported type');
      for (const [raw, what] of [['not json', 'not JSON'], ['[1,2]', 'a JSON array'], ['"text"', 'a JSON string'], ['null', 'null'], ['42', 'a number'],
        ['{"note":"a\\u0000b"}', 'a NUL character'], ['{"note":"a\\ud83db"}', 'half a surrogate pair']]) {
        assertError(t, await upload('refusals', 'ok.txt', 'fine text', 'text/plain', raw), 400, /metadata/, `metadata ${what}`);
        await nothingWritten(`metadata ${what}`);
        assertError(t, await send('refusals', multipartFileFirst({ filename: 'ok.txt', content: 'fine text' }, { metadata: raw! })), 400, /metadata/, `metadata ${what} after the file`);
        await nothingWritten(`metadata ${what} after the file`);
      }
      // Over the 1 MiB field limit busboy cuts the field: the answer names the size, not bad JSON.
      const oversized = JSON.stringify({ notes: 'x'.repeat(1024 * 1024) });
      assertError(t, await upload('refusals', 'ok.txt', 'fine text', 'text/plain', oversized), 413, /Field "metadata" is larger than 1048576 bytes/, 'metadata over 1 MiB');
      await nothingWritten('metadata over 1 MiB');
      const accepted = await upload('refusals', 'ok.txt', 'fine text', 'text/plain', '');
      t.equal(accepted.statusCode, 202, 'an empty metadata field is no metadata');
      t.same(accepted.json().metadata, {});

      const tenanted = await createCollection({ name: 'tenanted', tenant_field: 'org' });
      for (const [metadata, what] of [[undefined, 'no metadata'], [{ team: 'x' }, 'no org'], [{ org: '' }, 'empty org'], [{ org: null }, 'null org']] as const) {
        assertError(t, await upload('tenanted', 'a.txt', 'tenant text', 'text/plain', metadata), 400, /\borg\b/, `tenant: ${what}`);
        assertError(t, await send('tenanted', multipartFileFirst({ filename: 'a.txt', content: 'tenant text' }, metadata ? { metadata: JSON.stringify(metadata) } : {})), 400, /\borg\b/, `tenant: ${what}, file first`);
      }
      // Over 64 KB, the file is written to the file store before the metadata is read, then removed.
      const largeFirst = multipartFileFirst({ filename: 'a.txt', content: 'tenant text '.repeat(6000) }, { metadata: JSON.stringify({ team: 'x' }) });
      assertError(t, await send('tenanted', largeFirst), 400, /\borg\b/, 'tenant: no org, a large file first');
      t.equal(await documentCount('tenanted'), 0);
      t.same(await originalsOf(ctx, tenanted.id), []);
      const tenantOk = await upload('tenanted', 'a.txt', 'tenant text', 'text/plain', { org: 'acme' });
      t.equal(tenantOk.statusCode, 202, tenantOk.body);

      const schemed = await createCollection({ name: 'schemed', metadata_schema: { type: 'object', required: ['lang'], properties: { lang: { type: 'string' } } } });
      for (const [metadata, what] of [[undefined, 'no metadata'], [{}, 'missing lang'], [{ lang: 5 }, 'lang a number'], [{ lang: ['en'] }, 'lang an array']] as const) {
        assertError(t, await upload('schemed', 'a.txt', 'schema text', 'text/plain', metadata), 400, /metadata/, `schema: ${what}`);
        assertError(t, await send('schemed', multipartFileFirst({ filename: 'a.txt', content: 'schema text' }, metadata ? { metadata: JSON.stringify(metadata) } : {})), 400, /metadata/, `schema: ${what}, file first`);
      }
      t.match((await upload('schemed', 'a.txt', 'schema text', 'text/plain', { lang: 5 })).json().detail, /lang/, 'the detail names the bad field');
      t.equal(await documentCount('schemed'), 0);
      t.same(await originalsOf(ctx, schemed.id), []);
      const schemaOk = await upload('schemed', 'a.txt', 'schema text', 'text/plain', { lang: 'en', extra: true });
      t.equal(schemaOk.statusCode, 202, schemaOk.body);
      await waitForIngestion(app, 'schemed', admin);
      await waitForIngestion(app, 'tenanted', admin);
      await waitForIngestion(app, 'refusals', admin);
    });

    await t.test('a body that stops mid-file (a client that hung up): 400, nothing kept, the service goes on', async (t) => {
      const cut = await createCollection({ name: 'cut' });
      const large = (word: string) => ({ filename: `${word}.txt`, content: `${word} `.repeat(12_800), contentType: 'text/plain' });
      const single = multipartUpload([large('harbour')]);
      // Within the first 64 KB (while the upload is judged), then past them (while it is written):
      // the second used to crash the process with an unhandled stream error.
      for (const bytes of [40_000, 80_000]) {
        const response = await send('cut', { payload: single.payload.subarray(0, bytes), headers: single.headers });
        assertError(t, response, 400, /ended before its closing boundary/, `cut after ${bytes} bytes`);
      }
      // A small file whole but its closing boundary cut (`--boundary-`): the part had failed before it
      // was read, and waiting for its events kept the request open forever.
      const small = multipartUpload([{ filename: 'small.txt', content: 'harbour pilots', contentType: 'text/plain' }]);
      assertError(t, await send('cut', { payload: small.payload.subarray(0, small.payload.length - 5), headers: small.headers }), 400, /ended before its closing boundary/, 'closing boundary cut');
      const batch = multipartUpload([large('harbour'), large('pilots')]);
      const response = await app.inject({
        method: 'POST', url: '/v1/collections/cut/documents/batch', headers: { ...admin, ...batch.headers }, payload: batch.payload.subarray(0, 150_000),
      });
      assertError(t, response, 400, /ended before its closing boundary/, 'a batch cut in its second file');
      t.equal(await documentCount('cut'), 0, 'no document');
      t.same(await originalsOf(ctx, cut.id), [], 'no stored original: the first file of the batch was removed');
      t.equal((await upload('cut', 'whole.txt', 'A whole file after the cut ones.', 'text/plain')).statusCode, 202, 'the next upload is accepted');
      await waitForIngestion(app, 'cut', admin);
    });

    await t.test('a file over the upload limit: 413, nothing written', async (t) => {
      const limited = await buildTestApp(backend, { uploadLimitBytes: 2048 });
      t.teardown(() => limited.close());
      const limitedCookie = await setupAdmin(limited.app);
      const headers = { cookie: limitedCookie };
      const created = await limited.app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'limited' } });
      t.equal(created.statusCode, 201);
      const collectionId = created.json().id;
      const post = (content: string, fields: Record<string, string> = {}) => {
        const body = multipartUpload([{ filename: 'big.txt', content, contentType: 'text/plain' }], fields);
        return limited.app.inject({ method: 'POST', url: '/v1/collections/limited/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
      };
      const count = async () => (await limited.app.inject({ url: '/v1/collections/limited/documents', headers })).json().total;
      assertError(t, await post('x'.repeat(2049)), 413, /2048/, 'one byte over');
      assertError(t, await post('word '.repeat(2000), { metadata: '{"a":1}' }), 413, undefined, 'far over');
      const fileFirst = multipartFileFirst({ filename: 'big.txt', content: 'y'.repeat(5000) }, { metadata: '{"a":1}' });
      assertError(t, await limited.app.inject({ method: 'POST', url: '/v1/collections/limited/documents', headers: { ...headers, ...fileFirst.headers }, payload: fileFirst.payload }), 413, undefined, 'over, metadata after');
      t.equal(await count(), 0, 'no document');
      t.same(await originalsOf(limited, collectionId), [], 'no stored original');
      const exact = await post('z '.repeat(1024));
      t.equal(exact.statusCode, 202, 'exactly the limit is accepted');
      t.equal(exact.json().size_bytes, 2048);
      await waitForIngestion(limited.app, 'limited', headers);
      t.equal(await count(), 1);
    });

    await t.test('semicolons in text, filenames, metadata and queries', async (t) => {
      // Plain punctuation: code blocks and prose are full of ";".
      await createCollection({ name: 'semicolons' });
      const accepted: Record<string, string> = {};
      const uploads: Array<[string, string, Record<string, unknown> | undefined]> = [
        ['code.md', '# Code\n\nCall `init();` first; then `run();`.\n\n```js\nconst a = 1;\n```\n', undefined],
        ['a;b.txt', 'semicolon filename content', undefined],
        ['meta.txt', 'semicolon metadata content', { note: 'x;y' }],
      ];
      for (const [filename, content, metadata] of uploads) {
        const response = await upload('semicolons', filename, content, 'text/plain', metadata);
        t.equal(response.statusCode, 202, `${filename}: ${response.body.slice(0, 200)}`);
        if (response.statusCode === 202) {
          t.equal(response.json().filename, filename);
          t.ok(Date.parse(response.json().created_at), `${filename}: created_at is a timestamp`);
          accepted[filename] = response.json().id;
        }
      }
      const documents = await waitForIngestion(app, 'semicolons', admin);
      t.equal(documents.length, Object.keys(accepted).length, 'no document exists beyond the accepted ones');
      for (const document of documents) {
        t.match(document, { status: 'ready', error: null }, `${document.filename} is ready`);
        t.ok(document.chunk_count > 0, `${document.filename} has chunks`);
      }
      for (const text of ['init(); run();', 'semicolon; metadata', 'const a = 1;']) {
        for (const mode of ['semantic', 'keyword', 'hybrid']) {
          const response = await query('semicolons', { query: text, search_mode: mode });
          t.equal(response.statusCode, 200, `${mode} "${text}": ${response.body.slice(0, 200)}`);
        }
      }
      const bySemicolon = await listDocuments('semicolons', '?q=%3B');
      t.equal(bySemicolon.statusCode, 200, `q=";": ${bySemicolon.body.slice(0, 200)}`);
      if (bySemicolon.statusCode === 200) t.same(bySemicolon.json().data.map((document: any) => document.filename), ['a;b.txt'], 'q holding ";" matches the filename');
      const noMatch = await listDocuments('semicolons', '?q=x%3By%3Bz');
      t.equal(noMatch.statusCode, 200);
      if (noMatch.statusCode === 200) t.same(noMatch.json(), { data: [], total: 0, limit: 50, offset: 0 });
      const filtered = await query('semicolons', { query: 'semicolon metadata content', search_mode: 'keyword', filters: { note: 'x;y' } });
      t.equal(filtered.statusCode, 200);
      t.same(filtered.json().results?.map((result: any) => result.document_id), [accepted['meta.txt']], 'a filter value with ";" matches');
    });

    await t.test('an unreadable document ends failed with the stage named, and fails alone', async (t) => {
      // The parsers reject nothing (invalid UTF-8 is read as Latin-1, empty files parse to no
      // elements), so the unreadable document is one whose stored file has vanished. Workers start
      // after the uploads, so the bad documents are claimed in one batch with good ones.
      const paused = await buildTestApp(backend, {}, { startWorkers: false });
      t.teardown(() => paused.close());
      const pausedCookie = await setupAdmin(paused.app);
      const headers = { cookie: pausedCookie };
      const created = await paused.app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'failing' } });
      t.equal(created.statusCode, 201);
      const post = async (filename: string, content: string | Buffer, contentType: string) => {
        const body = multipartUpload([{ filename, content, contentType }]);
        const response = await paused.app.inject({ method: 'POST', url: '/v1/collections/failing/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
        t.equal(response.statusCode, 202, `${filename} is accepted: ${response.body.slice(0, 200)}`);
        return response.json().id as string;
      };
      // Over 64 KB, so it is a file (a small original is a row; ingestion-restart.test.ts loses one of those).
      const vanished = await post('vanished.txt', 'This file will be gone before a worker reads it. '.repeat(1500), 'text/plain');
      const stored = await originalsOf(paused, created.json().id);
      t.equal(stored.length, 1);
      t.notMatch(stored[0], /^database:/, 'kept as a file');
      await rm(path.join(paused.services.config.dataDir, 'files', created.json().id, stored[0]!));
      const first = await post('first.txt', 'Harbour pilots guide ships through the channel.', 'text/plain');
      await paused.services.start();
      await waitForIngestion(paused.app, 'failing', headers, 60_000);
      const read = async (id: string) => (await paused.app.inject({ url: `/v1/collections/failing/documents/${id}`, headers })).json();
      const failed = await read(vanished);
      t.equal(failed.status, 'failed');
      t.match(failed.error, /^parsing failed: \S/, 'error names the stage');
      t.equal(failed.chunk_count, 0);
      t.equal((await paused.app.inject({ url: `/v1/collections/failing/documents/${vanished}/chunks`, headers })).json().total, 0, 'no chunks');
      t.match(await read(first), { status: 'ready', error: null }, 'its batch neighbour is ready');

      // A NUL character is text PostgreSQL cannot store: the document may fail (or be cleaned), never its neighbours.
      await paused.services.ingestion.stop();
      const binary = await post('binary.txt', Buffer.from('header\u0000\u0001\u0002 binary tail', 'utf8'), 'text/plain');
      const good = await post('good.txt', TEXT, 'text/plain');
      const emptyBody = multipartUpload([{ filename: 'empty.html', content: '', contentType: 'text/html' }]);
      const empty = await paused.app.inject({ method: 'POST', url: '/v1/collections/failing/documents', headers: { ...headers, ...emptyBody.headers }, payload: emptyBody.payload });
      assertError(t, empty, 400, /empty\.html.*empty/, 'an empty file is refused');
      const latin1 = await post('latin1.md', Buffer.from([0x23, 0x20, 0x43, 0x61, 0x66, 0xe9, 0x0a, 0x0a, 0x4e, 0x61, 0xef, 0x76, 0x65, 0x0a]), 'text/markdown');
      // Windows-1252's quotes, dash and euro sign (0x93 0x94 0x96 0x80) were read as Latin-1 control characters and dropped.
      const windows1252 = await post('quotes.txt', Buffer.concat([Buffer.from('Smart '), Buffer.from([0x93]), Buffer.from('quotes'), Buffer.from([0x94]), Buffer.from(' '), Buffer.from([0x96]), Buffer.from(' 20 '), Buffer.from([0x80])]), 'text/plain');
      // UTF-8 but for one stray Latin-1 byte: the UTF-8 stays UTF-8 ("Café naïve" was read whole as Latin-1, "CafÃ© naÃ¯ve").
      const strayByte = await post('stray.md', Buffer.concat([Buffer.from('# Café naïve\n\nOne stray byte: d'), Buffer.from([0xe9]), Buffer.from('j\u00e0 vu.\n')]), 'text/markdown');
      await paused.services.start();
      await waitForIngestion(paused.app, 'failing', headers, 60_000);
      const binaryDocument = await read(binary);
      t.ok(['failed', 'ready'].includes(binaryDocument.status), `binary.txt ends failed or ready (${binaryDocument.status})`);
      if (binaryDocument.status === 'failed') t.match(binaryDocument.error, /^(parsing|chunking|embedding|indexing) failed: \S/, 'binary.txt: error names the stage');

      const goodDocument = await read(good);
      t.match(goodDocument, { status: 'ready', error: null }, 'a good document claimed with the bad ones is not failed by them');
      t.ok(goodDocument.chunk_count > 0);
      const latin1Document = await read(latin1);
      t.equal(latin1Document.status, 'ready', 'invalid UTF-8 is read as Latin-1');
      t.equal(latin1Document.title, 'Café');
      const chunkText = async (id: string) => (await paused.app.inject({ url: `/v1/collections/failing/documents/${id}/chunks`, headers })).json().data.map((chunk: any) => chunk.text).join('\n');
      t.equal(await chunkText(windows1252), 'Smart \u201cquotes\u201d \u2013 20 \u20ac', 'Windows-1252 punctuation and euro sign kept');
      t.equal((await read(strayByte)).title, 'Café naïve', 'the UTF-8 title of a file with one stray byte');
      t.match(await chunkText(strayByte), /One stray byte: déjà vu\./, 'the stray byte read as Windows-1252');
      const failedNames = (await paused.app.inject({ url: '/v1/collections/failing/documents?status=failed&sort=filename&order=asc', headers })).json()
        .data.map((document: any) => document.filename);
      t.same(failedNames, binaryDocument.status === 'failed' ? ['binary.txt', 'vanished.txt'] : ['vanished.txt'], 'only the unreadable documents failed');
      const found = (await paused.app.inject({ method: 'POST', url: '/v1/collections/failing/query', headers, payload: { query: 'file gone before worker reads', search_mode: 'keyword' } })).json();
      t.notOk(found.results.some((result: any) => result.document_id === vanished), 'nothing of the failed document is searchable');
      const keeperHits = (await paused.app.inject({ method: 'POST', url: '/v1/collections/failing/query', headers, payload: { query: 'lighthouse keeper logbook', search_mode: 'keyword' } })).json();
      t.ok(keeperHits.results.some((result: any) => result.document_id === good), 'the good document is searchable');
    });
  });
}
