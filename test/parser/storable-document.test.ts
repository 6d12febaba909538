/**
 * Through the API: valid files whose escapes make a NUL character or half a surrogate pair (JSON's
 * "\u0000" and "\ud800", YAML front matter's "\0", a PDF's "\000") end ready, each such character
 * U+FFFD wherever it is stored (src/parsing/storable-document.ts). PostgreSQL's text refuses NUL and its jsonb refuses
 * both: such a document failed at its first write, after retries as if the database were away.
 */
import t from 'tap';
import { storableParsedDocument } from '../../src/parsing/storable-document.js';
import type { DocumentElement } from '../../src/plugins.js';
import { buildPdf } from '../support/document-fixtures.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

interface Chunk { text: string; metadata: Record<string, any> }
interface Element { type: string; text: string; heading_path: string[]; metadata: Record<string, any> }

const R = '\ufffd';
/** The file's own text: the backslashes are the file's, so the characters are made by the parsers. */
const json = String.raw`{"cargo":"before\u0000after lighthouse","crew":"pilot\ud800boat","k\u0000ey":"keyed\udc00 value","nested":{"de\ud800ep":"anchor\u0000chain"}}`;
const markdown = String.raw`---
title: "Tide\0 tables"
author: "x\0y"
keywords: ["sea\ud800", "port"]
"ke\0y": value
---

# Ferry &#0; routes

Ferries cross the sound at dawn &#xD800; every day.

<p>Harbour&#0;master</p>
`;

/** No NUL and no half of a surrogate pair in any string of the value, field names included. */
function storable(value: unknown): boolean {
  const text = JSON.stringify(value);
  return !text.includes('\\u0000') && !/\\ud[89a-f][0-9a-f]{2}/i.test(text);
}

t.test('storableParsedDocument', async (t) => {
  const clean: DocumentElement = { type: 'paragraph', text: 'Pilots \u{1f6a2} board at dawn.', headingPath: ['Pilots'], metadata: { line: 1 } };
  const parsed = storableParsedDocument({ elements: [clean], title: 'Pilots', metadata: { tags: ['sea'] } });
  t.equal(parsed.elements[0], clean, 'an element with nothing to replace is kept as it is (a pair is not half a pair)');
  const fixed = storableParsedDocument({
    elements: [{ ...clean, text: 'a\u0000b', metadata: { ['__proto__']: 'x\ud800', when: new Date(0) } }],
    metadata: JSON.parse('{"__proto__": {"k\\u0000": "v"}}') as Record<string, unknown>,
  });
  t.equal(fixed.elements[0]!.text, `a${R}b`);
  t.same(Object.entries(fixed.elements[0]!.metadata!), [['__proto__', `x${R}`], ['when', '1970-01-01T00:00:00.000Z']], 'a field named __proto__ stays a field; a Date is what it is stored as');
  t.same(Object.entries(fixed.metadata!), [['__proto__', { [`k${R}`]: 'v' }]], 'source metadata too');
  t.same(clean, { type: 'paragraph', text: 'Pilots \u{1f6a2} board at dawn.', headingPath: ['Pilots'], metadata: { line: 1 } }, 'the parser\'s objects are not changed');
});

// Once more on the thread large files are parsed on (parsing-thread.ts): its results pass the same way.
const runs = testBackends().flatMap((backend) => (backend === 'pglite' ? [[backend, 'inline'], [backend, 'on threads']] : [[backend, 'inline']]));
for (const [backend, where] of runs as Array<[ReturnType<typeof testBackends>[number], string]>) {
  t.test(`${backend}, parsed ${where}`, async (t) => {
    const { app, admin } = await adminTestApp(t, backend, where === 'on threads' ? { parseOnThreadMinBytes: 0 } : {});
    await createTestCollection(app, admin, { name: 'escapes' });
    const upload = async (filename: string, content: string | Buffer, contentType: string) => {
      const body = multipartUpload([{ filename, content, contentType }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/escapes/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, `${filename} accepted`);
      return response.json().id as string;
    };
    const jsonId = await upload('cargo.json', json, 'application/json');
    const markdownId = await upload('ferries.md', markdown, 'text/markdown');
    const pdf = await buildPdf({ author: 'Port\u0000Authority', keywords: ['berths\u0000'], pages: [{ heading: 'Berths', paragraphs: ['Pilots moor tankers at every berth.'] }] });
    const pdfId = await upload('berths.pdf', pdf, 'application/pdf');
    const documents = await waitForIngestion(app, 'escapes', admin);
    for (const document of documents) t.match(document, { status: 'ready', error: null }, `${document.filename} is ready`);

    const read = async (path: string) => (await app.inject({ url: `/v1/collections/escapes/documents/${path}`, headers: admin })).json();
    const elements = async (id: string) => (await read(`${id}/elements?limit=500`)).data as Element[];
    const chunks = async (id: string) => (await read(`${id}/chunks?limit=500`)).data as Chunk[];

    await t.test('JSON: escapes in values and in keys', async (t) => {
      const stored = await elements(jsonId);
      t.same(stored.map((element) => [element.text, element.metadata.key]), [
        [`cargo: before${R}after lighthouse`, 'cargo'],
        [`crew: pilot${R}boat`, 'crew'],
        [`k${R}ey: keyed${R} value`, `k${R}ey`],
        [`nested.de${R}ep: anchor${R}chain`, 'nested'],
      ], 'element text and metadata hold U+FFFD where the escapes were');
      const storedChunks = await chunks(jsonId);
      t.ok(storedChunks.some((chunk) => chunk.text.includes(`before${R}after lighthouse`)), 'chunk text too');
      t.ok(storable(stored) && storable(storedChunks), 'nothing unstorable is left anywhere');
    });

    await t.test('Markdown: escapes in front matter and body', async (t) => {
      const document = await read(markdownId);
      t.equal(document.title, `Tide${R} tables`, 'the title from the front matter');
      t.same(document.source_metadata, { title: `Tide${R} tables`, author: `x${R}y`, keywords: [`sea${R}`, 'port'], [`ke${R}y`]: 'value' }, 'the source metadata, field names included');
      const stored = await elements(markdownId);
      t.same(stored.map((element) => [element.type, element.text, element.heading_path]), [
        ['heading', `Ferry ${R} routes`, []],
        ['paragraph', `Ferries cross the sound at dawn ${R} every day.`, [`Ferry ${R} routes`]],
        ['paragraph', `Harbour${R}master`, [`Ferry ${R} routes`]],
      ], 'character references in the body, as before');
      const storedChunks = await chunks(markdownId);
      t.match(storedChunks[0]!.metadata, { author: `x${R}y`, keywords: [`sea${R}`, 'port'], [`ke${R}y`]: 'value', heading_path: [`Ferry ${R} routes`] }, 'chunk metadata from the front matter');
      t.ok(storable(document) && storable(stored) && storable(storedChunks), 'nothing unstorable is left anywhere');
    });

    await t.test('PDF: NULs in the Info dictionary', async (t) => {
      const document = await read(pdfId);
      t.same(document.source_metadata, { pages: 1, author: `Port${R}Authority`, keywords: [`berths${R}`] }, 'the source metadata');
      const storedChunks = await chunks(pdfId);
      t.match(storedChunks[0]!.metadata, { author: `Port${R}Authority`, keywords: [`berths${R}`] }, 'chunk metadata');
      t.ok(storable(document) && storable(storedChunks), 'nothing unstorable is left anywhere');
    });

    await t.test('all are found in every search mode', async (t) => {
      for (const mode of ['keyword', 'semantic', 'hybrid']) {
        for (const [query, id] of [['lighthouse cargo', jsonId], ['ferries cross the sound at dawn', markdownId], ['pilots moor tankers', pdfId]] as const) {
          const response = await app.inject({ method: 'POST', url: '/v1/collections/escapes/query', headers: admin, payload: { query, search_mode: mode, skip_cache: true } });
          t.equal(response.statusCode, 200);
          t.ok((response.json().results as Array<{ document_id: string }>).some((result) => result.document_id === id), `${mode}: "${query}" finds its document`);
        }
      }
    });
  });
}
