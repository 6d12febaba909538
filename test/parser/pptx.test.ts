/**
 * PowerPoint decks through the API: slides in the deck's order, titles as headings, bulleted
 * lists, tables with their header row and speaker notes, each with its slide number as `page`;
 * damaged decks fail naming the stage.
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { buildPng, buildZip } from '../support/document-fixtures.js';
import { buildPptx, type PptxOptions } from '../support/pptx-fixture.js';
import { adminTestApp, createTestCollection, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';

const PPTX_TYPE = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';

/** Three slides, written as files 1, 3, 2 and shown as 1, 2, 3: the deck's order is presentation.xml's. */
const BRIEFING: PptxOptions = {
  title: 'Harbour Operations Briefing',
  creator: 'Port Authority',
  order: [1, 3, 2],
  slides: [
    { shapes: [{ kind: 'ctrTitle', lines: [{ text: 'Harbour Operations 2026' }] }, { kind: 'subTitle', lines: [{ text: 'Annual briefing for the port board' }] }] },
    {
      shapes: [
        { kind: 'title', lines: [{ text: 'Tariffs' }] },
        { kind: 'table', headerRow: true, rows: [['Vessel', 'Fee per day'], ['Container ship', '1,200 EUR'], ['Ferry', '300 EUR']] },
        { kind: 'picture', name: 'image1.png', data: buildPng(), description: 'Chart of fees since 2020' },
        { kind: 'picture', name: 'image2.emf', data: Buffer.from('EMF drawing'), description: 'Harbour logo' },
        { kind: 'ftr', lines: [{ text: 'Confidential' }] },
      ],
    },
    {
      shapes: [
        { kind: 'title', lines: [{ text: 'Berth allocation' }] },
        { kind: 'body', lines: [{ text: 'Container ships use berths 1 to 4' }, { text: 'Berth 3 is closed for dredging in March', level: 1 }, { text: 'Ferries use the north quay' }] },
        { kind: 'textBox', lines: [{ text: 'Source: harbour master' }] },
        { kind: 'alternateContent', lines: [{ text: 'Depth at berth 3: 14.5 m' }] },
        { kind: 'sldNum', lines: [{ text: '2' }] },
      ],
      notes: 'Mention the dredging contract signed in January.',
    },
  ],
};

interface Element { type: string; text: string; heading_path: string[]; page: number | null; metadata: Record<string, unknown>; content_url?: string | null }

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    // Multimodal: the pictures of image elements are kept and served.
    await createTestCollection(app, admin, { name: 'decks', multimodal_enabled: true });
    const upload = (filename: string, content: Buffer, contentType = PPTX_TYPE) => uploadDocument(app, admin, 'decks', { filename, content, contentType });

    await t.test('a deck: slides in order, titles, lists, tables and speaker notes, each with its slide number', async (t) => {
      const deck = buildPptx(BRIEFING);
      const created = await upload('briefing.pptx', deck);
      t.equal(created.statusCode, 202, created.body);
      const untyped = await upload('agenda.pptx', buildPptx({ slides: [{ shapes: [{ kind: 'title', lines: [{ text: 'Agenda' }] }] }] }), 'application/octet-stream');
      t.equal(untyped.statusCode, 202, untyped.body);
      t.equal(untyped.json().content_type, PPTX_TYPE, 'recognised without its content type');
      const documents = await waitForIngestion(app, 'decks', admin);
      t.same(documents.map((document) => document.status), ['ready', 'ready'], JSON.stringify(documents.map((document) => document.error)));

      const id = created.json().id as string;
      const document = (await app.inject({ url: `/v1/collections/decks/documents/${id}`, headers: admin })).json();
      t.equal(document.title, 'Harbour Operations Briefing', 'the title of the file\'s properties');
      t.match(document.source_metadata, { author: 'Port Authority', slides: 3 });

      const elements = (await app.inject({ url: `/v1/collections/decks/documents/${id}/elements`, headers: admin })).json().data as Element[];
      t.same(elements.map((element) => [element.page, element.type, element.text, element.heading_path]), [
        [1, 'heading', 'Harbour Operations 2026', []],
        [1, 'paragraph', 'Annual briefing for the port board', ['Harbour Operations 2026']],
        [2, 'heading', 'Berth allocation', []],
        [2, 'list', '- Container ships use berths 1 to 4\n  - Berth 3 is closed for dredging in March\n- Ferries use the north quay', ['Berth allocation']],
        [2, 'paragraph', 'Source: harbour master', ['Berth allocation']],
        [2, 'paragraph', 'Depth at berth 3: 14.5 m', ['Berth allocation']],
        [2, 'paragraph', 'Mention the dredging contract signed in January.', ['Berth allocation']],
        [3, 'heading', 'Tariffs', []],
        [3, 'table', 'Vessel | Fee per day\nContainer ship | 1,200 EUR\nFerry | 300 EUR', ['Tariffs']],
        [3, 'image', 'Chart of fees since 2020', ['Tariffs']],
        [3, 'image', 'Harbour logo', ['Tariffs']],
      ], 'no slide number, footer or notes-page number among them, and a shape written with a fallback once');
      t.equal(elements[6]!.metadata.speaker_notes, true, 'the notes say they are notes');
      t.notOk(elements[4]!.metadata.speaker_notes);
      const [chart, logo] = elements.filter((element) => element.type === 'image');
      t.match(chart, { metadata: { content_type: 'image/png', width: 32, height: 24 }, content_url: /\/content$/ }, 'a picture keeps its bytes, and its size is read');
      const picture = await app.inject({ url: chart!.content_url!, headers: admin });
      t.equal(picture.statusCode, 200);
      t.same(picture.rawPayload, buildPng(), 'the picture as it was in the deck');
      t.match(logo, { metadata: { content_type: 'image/x-emf' }, content_url: null }, 'an EMF drawing keeps its element, not its bytes');

      const query = await app.inject({ method: 'POST', url: '/v1/collections/decks/query', headers: admin, payload: { query: 'dredging contract', search_mode: 'keyword', filters: { slides: 3 } } });
      t.equal(query.statusCode, 200, query.body);
      const [best] = query.json().results;
      t.match(best, { document_title: 'Harbour Operations Briefing', document_filename: /^briefing/, metadata: { page: 2, heading_path: ['Berth allocation'] } }, 'a result can say which slide');
      const tariffs = await app.inject({ method: 'POST', url: '/v1/collections/decks/query', headers: admin, payload: { query: 'ferry fee per day', search_mode: 'keyword' } });
      t.match(tariffs.json().results[0], { metadata: { page: 3 } });
    });

    await t.test('a damaged deck fails naming the stage; a picture named .pptx is refused', async (t) => {
      const deck = buildPptx(BRIEFING);
      const truncated = await upload('truncated.pptx', deck.subarray(0, Math.floor(deck.length / 2)));
      t.equal(truncated.statusCode, 202, truncated.body);
      await waitForIngestion(app, 'decks', admin);
      const failed = (await app.inject({ url: `/v1/collections/decks/documents/${truncated.json().id}`, headers: admin })).json();
      t.equal(failed.status, 'failed');
      t.match(failed.error, /^parsing failed: PPTX zip container: the archive is truncated or damaged \(/);
      assertError(t, await upload('photo.pptx', buildPng(), 'image/png'), 415, /"photo\.pptx" is PNG data \(image\/png\) by its content; supported: .*\.pptx/, 'a picture');

      // Declared a presentation by its content types, holding none.
      const declaredOnly = buildZip([{ name: '[Content_Types].xml', data: Buffer.from('<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/></Types>') }]);
      const empty = await upload('empty.pptx', declaredOnly);
      t.equal(empty.statusCode, 202, empty.body);
      await waitForIngestion(app, 'decks', admin);
      t.match((await app.inject({ url: `/v1/collections/decks/documents/${empty.json().id}`, headers: admin })).json(), {
        status: 'failed', error: 'parsing failed: PPTX: the archive holds no presentation (ppt/presentation.xml)',
      }, 'a package without a presentation');
    });

    await t.test('a bullet level beyond DrawingML\'s range is read as its deepest level', async (t) => {
      const created = await upload('deep.pptx', buildPptx({ slides: [{ shapes: [{ kind: 'body', lines: [{ text: 'Top' }, { text: 'Far down', level: 1e9 }] }] }] }));
      t.equal(created.statusCode, 202, created.body);
      await waitForIngestion(app, 'decks', admin, 20_000);
      const elements = (await app.inject({ url: `/v1/collections/decks/documents/${created.json().id}/elements`, headers: admin })).json().data as Element[];
      t.same(elements.map((element) => element.text), [`- Top\n${'  '.repeat(8)}- Far down`], 'nine levels at most (0-8), as PowerPoint has');
    });

    await t.test('a deck without its slide list is read in the order of its slide files', async (t) => {
      const titled = (text: string) => ({ shapes: [{ kind: 'title' as const, lines: [{ text }] }] });
      const created = await upload('unlisted.pptx', buildPptx({ withoutPresentation: true, slides: [titled('Opening'), titled('Closing')] }));
      t.equal(created.statusCode, 202, created.body);
      await waitForIngestion(app, 'decks', admin);
      const elements = (await app.inject({ url: `/v1/collections/decks/documents/${created.json().id}/elements`, headers: admin })).json().data as Element[];
      t.same(elements.map((element) => [element.page, element.text]), [[1, 'Opening'], [2, 'Closing']]);
    });
  });
}
