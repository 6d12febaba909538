import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { assertError } from '../support/assertions.js';
import {
  buildDocx, buildPdf, buildPng, buildZipBomb, sampleCsv, sampleJson, sampleJsonl, sampleTsv,
} from '../support/document-fixtures.js';
import {
  buildTestApp, createTestCollection, multipartUpload, setupAdmin, type TestApp, testBackends, waitForIngestion,
} from '../support/test-app.js';

interface Chunk { id: string; chunk_index: number; text: string; metadata: Record<string, any> }
interface Element { type: string; text: string; heading_path: string[]; page: number | null; metadata: Record<string, any>; content_url?: string | null }

const MANUAL_PAGES = [
  { heading: 'Introduction', paragraphs: ['The harbour master keeps the logbook of every ship that enters the port.'] },
  { subheading: 'Pilots', paragraphs: ['Pilots guide container ships through the narrow channel at high tide.'], image: true },
  { heading: 'Safety', paragraphs: ['Lifebuoys hang at every berth and are inspected each morning.'] },
];

const COOKIE_PAGE = `<!doctype html><html><head><title>Tide tables</title></head><body>
<div class="cookie-banner">We use cookies. Accept all cookies?</div>
<nav>Home | Tides | Contact</nav>
<main><h1>Tide tables</h1><p>High water at Brest is at 06:12 today.</p>
<p>See <img src="https://example.com/range.png" alt="the tidal range chart"> for the week.</p></main>
<footer>Copyright harbour authority</footer></body></html>`;

// Shapes from real READMEs and changelogs (glob, fastify, ssri, chalk, jszip in node_modules).
const WIDGET_README = `<h1 align="center">Widget</h1>

[![npm version](https://img.shields.io/npm/v/widget.svg)](https://npm.im/widget) [![license](https://img.shields.io/npm/l/widget.svg)](https://npm.im/widget)

<pre><code class="language-sh">npm install widget</code></pre>

## Options

- \`retries\` number. For example:

  \`\`\`js
  widget({
    retries: 3,
  })
  \`\`\`

  Use with care.

### Schedule

| Version | Date |
| --- | --- |
| 1.0 | 2020 |

<table>
  <tr>
    <th>Plan</th>
    <th>Cost</th>
  </tr>
  <tr>
    <td>Basic</td>
    <td>5 EUR</td>
  </tr>
</table>

> ## Security releases
> Patch within a week.
`;

const BADGED_README = `# ssri [![npm version](https://img.shields.io/npm/v/ssri.svg)](https://npm.im/ssri) [![license](https://img.shields.io/npm/l/ssri.svg)](https://npm.im/ssri)

Subresource Integrity hashes.

## Install

![Diagram of the install steps](install.png)
`;

const LOGO_README = `<h1 align="center">
\t<img width="320" src="media/logo.svg" alt="Chalk">
</h1>

> Terminal string styling done right

<h2>API <a href="#stability"><img src="stable.svg" alt="stability: stable"></a></h2>

Call chalk.red().
`;

const CHANGELOG = `---
title: Changelog
layout: default
---

### v3.0.0 2022-05-20

- Drop Node 10.

# v2.0.0, 2013-10-20

- First stable release.
`;

const UNTITLED_NOTES = `## Contents

- Usage

# License

MIT
`;

/** Every file under a directory, as paths relative to it. */
function filesUnder(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort();
}

function client(ctx: TestApp, cookie: string) {
  const { app } = ctx;
  const headers = { cookie };
  return {
    headers,
    createCollection: (payload: Record<string, unknown>) => createTestCollection(app, headers, payload),
    upload(collection: string, filename: string, content: string | Buffer, contentType = 'application/octet-stream') {
      const body = multipartUpload([{ filename, content, contentType }]);
      return app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...headers, ...body.headers }, payload: body.payload });
    },
    async document(collection: string, id: string) {
      return (await app.inject({ url: `/v1/collections/${collection}/documents/${id}`, headers })).json();
    },
    async chunks(collection: string, id: string): Promise<Chunk[]> {
      return (await app.inject({ url: `/v1/collections/${collection}/documents/${id}/chunks?limit=500`, headers })).json().data;
    },
    async elements(collection: string, id: string): Promise<Element[]> {
      return (await app.inject({ url: `/v1/collections/${collection}/documents/${id}/elements?limit=500`, headers })).json().data;
    },
    async documentCount(collection: string): Promise<number> {
      return (await app.inject({ url: `/v1/collections/${collection}/documents`, headers })).json().total;
    },
  };
}

// Every format once more on the thread large files are parsed on (parsing-thread.ts): all of them there.
const runs = testBackends().flatMap((backend) => (backend === 'pglite' ? [[backend, 'inline'], [backend, 'on threads']] : [[backend, 'inline']]));
for (const [backend, where] of runs as Array<[ReturnType<typeof testBackends>[number], string]>) {
  t.test(`${backend}, parsed ${where}`, async (t) => {
    const ctx = await buildTestApp(backend, where === 'on threads' ? { parseOnThreadMinBytes: 0 } : {});
    t.teardown(() => ctx.close());
    const api = client(ctx, await setupAdmin(ctx.app));

    await t.test('every format through upload, ingestion, /chunks and /elements', async (t) => {
      await api.createCollection({ name: 'formats', chunk_size: 300, chunk_overlap: 0 });
      const uploads: Array<[string, string | Buffer, string?]> = [
        ['manual.pdf', await buildPdf({ title: 'Harbour Manual', pages: MANUAL_PAGES }), 'application/pdf'],
        ['handbook.docx', await buildDocx({ title: 'Staff Handbook', imageAlt: 'Company logo' })],
        ['people.csv', sampleCsv, 'text/csv'],
        ['stock.tsv', sampleTsv],
        ['places.json', sampleJson, 'application/json'],
        ['ships.jsonl', sampleJsonl],
        ['tides.html', COOKIE_PAGE, 'text/html'],
        ['scan.txt', await buildPdf({ pages: [{ paragraphs: ['A PDF that was saved with the wrong name.'] }] }), 'text/plain'],
      ];
      const ids: Record<string, string> = {};
      const contentTypes: Record<string, string> = {};
      for (const [filename, content, type] of uploads) {
        const response = await api.upload('formats', filename, content, type);
        t.equal(response.statusCode, 202, `${filename} accepted: ${response.body.slice(0, 200)}`);
        ids[filename] = response.json().id;
        contentTypes[filename] = response.json().content_type;
      }
      t.same(contentTypes, {
        'manual.pdf': 'application/pdf',
        'handbook.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        'people.csv': 'text/csv',
        'stock.tsv': 'text/tab-separated-values',
        'places.json': 'application/json',
        'ships.jsonl': 'application/x-ndjson',
        'tides.html': 'text/html',
        'scan.txt': 'application/pdf',
      }, 'the recorded type comes from the content, so a PDF named .txt is a PDF, and then from the name (.tsv and .jsonl are their own types)');
      const documents = await waitForIngestion(ctx.app, 'formats', api.headers);
      for (const document of documents) t.match(document, { status: 'ready', error: null }, `${document.filename} is ready`);

      const manual = await api.document('formats', ids['manual.pdf']!);
      t.equal(manual.title, 'Harbour Manual');
      const manualChunks = await api.chunks('formats', ids['manual.pdf']!);
      const safety = manualChunks.find((chunk) => chunk.text.includes('Lifebuoys'))!;
      t.match(safety.metadata, { page: 3, heading_path: ['Safety'] }, 'page number and heading path reach chunk metadata');
      const pilots = manualChunks.find((chunk) => chunk.text.includes('Pilots guide'))!;
      t.match(pilots.metadata, { page: 2 }, 'page 2');
      t.ok(manualChunks.every((chunk) => typeof chunk.metadata.page === 'number'), 'every PDF chunk has a page');
      const manualElements = await api.elements('formats', ids['manual.pdf']!);
      t.same(manualElements.map((element) => [element.type, element.page, element.heading_path, element.metadata.level ?? null]), [
        ['heading', 1, [], 1],
        ['paragraph', 1, ['Introduction'], null],
        ['heading', 2, ['Introduction'], 2],
        ['paragraph', 2, ['Introduction', 'Pilots'], null],
        ['image', 2, ['Introduction', 'Pilots'], null],
        ['heading', 3, [], 1],
        ['paragraph', 3, ['Safety'], null],
      ]);
      const keyword = await ctx.app.inject({ method: 'POST', url: '/v1/collections/formats/query', headers: api.headers, payload: { query: 'lifebuoys berth', search_mode: 'keyword' } });
      t.match(keyword.json().results[0], { document_id: ids['manual.pdf'], metadata: { page: 3 } }, 'a query result carries the page');

      t.equal((await api.document('formats', ids['handbook.docx']!)).title, 'Staff Handbook');
      const handbookChunks = await api.chunks('formats', ids['handbook.docx']!);
      t.match(handbookChunks.find((chunk) => chunk.text.includes('Monthly cost'))?.metadata, { heading_path: ['Employee Handbook', 'Costs'] });
      t.match(handbookChunks.find((chunk) => chunk.text.includes('Dental plan'))?.metadata, { heading_path: ['Employee Handbook', 'Benefits'] });
      const handbookElements = await api.elements('formats', ids['handbook.docx']!);
      t.same(handbookElements.map((element) => element.type), ['heading', 'paragraph', 'heading', 'list', 'list', 'heading', 'table', 'image', 'heading', 'paragraph']);
      t.same(handbookElements.find((element) => element.type === 'table')?.text, 'Plan | Monthly cost\nDental | 12 EUR\nVision | 7 EUR');

      const peopleElements = await api.elements('formats', ids['people.csv']!);
      t.same(peopleElements.map((element) => [element.type, element.text, element.metadata]), [
        ['table', 'name: Ada Lovelace\ncity: London\njoined: 1843', { row: 1, columns: ['name', 'city', 'joined'] }],
        ['table', 'name: Hopper, Grace\ncity: Arlington\njoined: 1944', { row: 2, columns: ['name', 'city', 'joined'] }],
        ['table', 'name: Alan Turing\ncity: Wilmslow Cheshire\njoined: 1936', { row: 3, columns: ['name', 'city', 'joined'] }],
      ]);
      t.ok((await api.chunks('formats', ids['stock.tsv']!)).some((chunk) => chunk.text.includes('description: Rope, 20 m')), 'TSV rows');
      t.ok((await api.chunks('formats', ids['places.json']!)).some((chunk) => chunk.text.includes('location.city: Oslo')), 'JSON paths');
      t.same((await api.elements('formats', ids['ships.jsonl']!)).map((element) => element.metadata), [{ line: 1 }, { line: 3 }], 'one element per JSONL line');
      const tides = (await api.chunks('formats', ids['tides.html']!)).map((chunk) => chunk.text).join('\n');
      t.match(tides, /High water at Brest/);
      t.notMatch(tides, /cookies|Home \| Tides|Copyright/, 'banner, nav and footer are not indexed');
      t.match(tides, /See the tidal range chart for the week\./, 'a remote picture is not fetched, its alt text stays in the sentence');
      const chart = await ctx.app.inject({ method: 'POST', url: '/v1/collections/formats/query', headers: api.headers, payload: { query: 'tidal range chart', search_mode: 'keyword' } });
      t.equal(chart.json().results[0]?.document_id, ids['tides.html'], 'and finds the page');
      t.match((await api.chunks('formats', ids['scan.txt']!))[0]?.metadata, { page: 1 }, 'the misnamed PDF is parsed as a PDF');
    });

    await t.test('Markdown READMEs: HTML headings and tables, badges, code in list items, front matter title', async (t) => {
      await api.createCollection({ name: 'readmes', chunk_size: 2000, chunk_overlap: 0 });
      const ids: Record<string, string> = {};
      for (const [filename, content] of [['widget.md', WIDGET_README], ['ssri.md', BADGED_README], ['chalk.md', LOGO_README], ['CHANGES.md', CHANGELOG], ['notes.md', UNTITLED_NOTES]]) {
        const response = await api.upload('readmes', filename!, content!, 'text/markdown');
        t.equal(response.statusCode, 202, filename);
        ids[filename!] = response.json().id;
      }
      for (const document of await waitForIngestion(ctx.app, 'readmes', api.headers)) t.match(document, { status: 'ready' }, document.filename);

      const widget = await api.elements('readmes', ids['widget.md']!);
      t.same(widget.map((element) => [element.type, element.text, element.heading_path, element.metadata.level ?? null]), [
        ['heading', 'Widget', [], 1],
        ['paragraph', 'npm version license', ['Widget'], null],
        ['code', 'npm install widget', ['Widget'], null],
        ['heading', 'Options', ['Widget'], 2],
        ['list', '- retries number. For example:\n  ```js\n  widget({\n    retries: 3,\n  })\n  ```\n  Use with care.', ['Widget', 'Options'], null],
        ['heading', 'Schedule', ['Widget', 'Options'], 3],
        ['table', 'Version | Date\n1.0 | 2020', ['Widget', 'Options', 'Schedule'], null],
        ['table', 'Plan | Cost\nBasic | 5 EUR', ['Widget', 'Options', 'Schedule'], null],
        ['paragraph', 'Security releases\nPatch within a week.', ['Widget', 'Options', 'Schedule'], null],
      ], 'an HTML h1 is a heading; code in a list item keeps its lines; an HTML table reads like a Markdown one; a heading in a quote stays a line of the quote');
      t.same(widget[2]?.metadata, { language: 'sh' }, 'an HTML <pre> is code, as in the html parser');
      t.equal((await api.document('readmes', ids['widget.md']!)).title, 'Widget', 'the HTML h1 names the document');
      const options = (await api.chunks('readmes', ids['widget.md']!)).find((chunk) => chunk.text.includes('retries: 3'));
      t.match(options?.text, /For example:\n {2}```js\n {2}widget\(\{\n {4}retries: 3,\n {2}\}\)\n {2}```\n {2}Use with care\./, 'the chunk shows the code as code');
      t.same(options?.metadata.heading_path, ['Widget', 'Options'], 'the chunk is in its section under the HTML h1');

      t.equal((await api.document('readmes', ids['ssri.md']!)).title, 'ssri', 'badge alt texts stay out of the title');
      const ssri = await api.chunks('readmes', ids['ssri.md']!);
      t.same(ssri.find((chunk) => chunk.text.includes('Subresource'))?.metadata.heading_path, ['ssri'], 'and out of heading paths');
      t.match(ssri.map((chunk) => chunk.text).join('\n'), /Diagram of the install steps/, 'a picture outside headings keeps its alt text');

      t.equal((await api.document('readmes', ids['chalk.md']!)).title, 'Chalk', 'a logo heading is named by its alt text');
      t.same((await api.elements('readmes', ids['chalk.md']!)).filter((element) => element.type === 'heading').map((element) => [element.text, element.heading_path, element.metadata.level]), [
        ['Chalk', [], 1],
        ['API', ['Chalk'], 2],
      ], 'a badge beside the words of an HTML heading is left out');

      t.equal((await api.document('readmes', ids['CHANGES.md']!)).title, 'Changelog', 'the front matter title wins over an h1 further down');
      t.equal((await api.document('readmes', ids['notes.md']!)).title, null, 'an h1 that is not the first heading does not name the document');
    });

    await t.test('multimodal collection: a PDF picture is kept and served back as PNG', async (t) => {
      await api.createCollection({ name: 'pictures', multimodal_enabled: true });
      const response = await api.upload('pictures', 'manual.pdf', await buildPdf({ pages: MANUAL_PAGES }));
      t.equal(response.statusCode, 202);
      await waitForIngestion(ctx.app, 'pictures', api.headers);
      const image = (await api.elements('pictures', response.json().id)).find((element) => element.type === 'image');
      t.match(image, { page: 2, heading_path: ['Introduction', 'Pilots'] });
      t.type(image?.content_url, 'string', 'the picture has a content URL');
      const content = await ctx.app.inject({ url: image!.content_url!, headers: api.headers });
      t.equal(content.statusCode, 200);
      t.equal(content.headers['content-type'], 'image/png');
      t.same(content.rawPayload, buildPng(), 'the embedded picture, pixel for pixel');
    });

    await t.test('hostile files: each fails or is refused with a clear error; the others are unaffected; nothing is written by parsing', async (t) => {
      // Every original a file, so that a file written by parsing would show among them.
      const paused = await buildTestApp(backend, { originalsInDatabaseMaxBytes: 0 }, { startWorkers: false });
      t.teardown(() => paused.close());
      const api = client(paused, await setupAdmin(paused.app));
      await api.createCollection({ name: 'hostile' });
      const filesRoot = path.join(paused.services.config.dataDir, 'files');

      const refusals: Array<[string, Buffer | string, number, RegExp]> = [
        ['empty.pdf', Buffer.alloc(0), 400, /^File "empty\.pdf" is empty: there is nothing to index$/],
        ['blob.txt', randomBytes(8192), 415, /^Unsupported file type: "blob\.txt" holds binary data of no supported format; supported: \.txt, .*\.pdf, \.docx, \.odt, \.pptx, \.odp, \.xlsx, \.ods, \.csv/],
        ['photo.docx', buildPng(), 415, /"photo\.docx" is PNG data \(image\/png\) by its content; supported: /],
      ];
      for (const [filename, content, status, detail] of refusals) {
        assertError(t, await api.upload('hostile', filename, content), status, detail, filename);
      }
      t.equal(await api.documentCount('hostile'), 0, 'refused uploads create no document');
      t.same(filesUnder(filesRoot), [], 'and store no file');

      const docx = await buildDocx();
      const accepted: Array<[string, Buffer | string]> = [
        ['malformed.pdf', '%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage without xref\n'],
        ['truncated.docx', docx.subarray(0, Math.floor(docx.length / 2))],
        ['bomb.docx', await buildZipBomb()],
        ['liar.docx', await buildZipBomb({ lying: true })],
        ['good.pdf', await buildPdf({ pages: [{ heading: 'Berths', paragraphs: ['Berth four takes the ferry.'] }] })],
        ['good.txt', 'The lighthouse keeper logs the weather.'],
      ];
      const ids: Record<string, string> = {};
      for (const [filename, content] of accepted) {
        const response = await api.upload('hostile', filename, content);
        t.equal(response.statusCode, 202, `${filename}: a supported type is accepted, its content judged by the parser`);
        ids[filename] = response.json().id;
      }
      const storedBefore = filesUnder(filesRoot);
      t.equal(storedBefore.length, accepted.length, 'one stored original per accepted upload');

      // The workers start after the uploads, so the hostile documents are claimed with the good ones.
      await paused.services.start();
      await waitForIngestion(paused.app, 'hostile', api.headers);
      const expected: Record<string, RegExp> = {
        'malformed.pdf': /^parsing failed: PDF document structure: the file is damaged or not a PDF \(Invalid PDF structure\)$/,
        'truncated.docx': /^parsing failed: DOCX zip container: the archive is truncated or damaged \(/,
        'bomb.docx': /^parsing failed: DOCX zip container: refused before decompression as a likely zip bomb: word\/document\.xml would inflate \d+× to 64\.0 MB/,
        'liar.docx': /^parsing failed: DOCX zip container: refused as a likely zip bomb: word\/document\.xml inflates past its declared 4096 bytes$/,
      };
      for (const [filename, error] of Object.entries(expected)) {
        const document = await api.document('hostile', ids[filename]!);
        t.match(document, { status: 'failed', chunk_count: 0 }, `${filename} failed`);
        t.match(document.error, error, `${filename}: the error names the stage`);
        t.same(await api.chunks('hostile', ids[filename]!), [], `${filename}: nothing indexed`);
      }
      for (const filename of ['good.pdf', 'good.txt']) {
        const document = await api.document('hostile', ids[filename]!);
        t.match(document, { status: 'ready', error: null }, `${filename} is unaffected by its neighbours`);
        t.ok(document.chunk_count > 0);
      }
      t.same(filesUnder(filesRoot), storedBefore, 'parsing wrote no file: only the uploaded originals are stored');
    });
  });
}
