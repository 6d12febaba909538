/**
 * OpenDocument presentations through the API: slides in order, titles as headings, lists, shapes,
 * tables, pictures and grouped shapes, then speaker notes, each with its slide number as `page`;
 * footers and slide numbers left out; damaged files fail naming the stage.
 */
import t from 'tap';
import { buildPng, buildZip } from '../support/document-fixtures.js';
import { buildOdp } from '../support/open-document-fixture.js';
import { adminTestApp, createTestCollection, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';

const ODP_TYPE = 'application/vnd.oasis.opendocument.presentation';

const frame = (placeholder: string, inner: string) => `<draw:frame presentation:class="${placeholder}"><draw:text-box>${inner}</draw:text-box></draw:frame>`;
const cell = (text: string) => `<table:table-cell><text:p>${text}</text:p></table:table-cell>`;

const BRIEFING = buildOdp({
  pictures: { 'chart.png': buildPng() },
  body: [
    '<draw:page draw:name="Opening">',
    frame('title', '<text:p>Harbour Operations 2026</text:p>'),
    frame('subtitle', '<text:p>Annual briefing for the port board</text:p>'),
    frame('footer', '<text:p>Confidential</text:p>'),
    frame('page-number', '<text:p>1</text:p>'),
    '</draw:page>',
    '<draw:page draw:name="Berths">',
    frame('title', '<text:p>Berth allocation</text:p>'),
    frame('outline', '<text:list><text:list-item><text:p>Container ships use berths 1 to 4</text:p><text:list><text:list-item><text:p>Berth 3 is closed for dredging in March</text:p></text:list-item></text:list></text:list-item><text:list-item><text:p>Ferries use the north quay</text:p></text:list-item></text:list>'),
    '<draw:custom-shape><text:p>Source: harbour master</text:p></draw:custom-shape>',
    '<presentation:notes><draw:page-thumbnail presentation:class="page"/>',
    frame('notes', '<text:p>Mention the dredging contract.</text:p>'),
    '</presentation:notes></draw:page>',
    '<draw:page draw:name="Tariffs">',
    frame('title', '<text:p>Tariffs</text:p>'),
    `<draw:frame><table:table><table:table-header-rows><table:table-row>${cell('Vessel')}${cell('Fee per day')}</table:table-row></table:table-header-rows>`,
    `<table:table-row>${cell('Container ship')}${cell('1,200 EUR')}</table:table-row></table:table></draw:frame>`,
    '<draw:frame draw:name="Chart"><draw:image xlink:href="Pictures/chart.png"/><svg:title>Chart of fees since 2020</svg:title></draw:frame>',
    '<draw:g><draw:custom-shape><text:p>Rates reviewed yearly</text:p></draw:custom-shape></draw:g>',
    '</draw:page>',
  ].join(''),
});

interface Element { type: string; text: string; heading_path: string[]; page: number | null; metadata: Record<string, unknown>; content_url?: string | null }

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'slides', multimodal_enabled: true });
    const upload = (filename: string, content: Buffer, contentType = ODP_TYPE) => uploadDocument(app, admin, 'slides', { filename, content, contentType });
    const documentOf = async (id: string) => (await app.inject({ url: `/v1/collections/slides/documents/${id}`, headers: admin })).json();

    await t.test('slides in order: titles, lists, shapes, tables, pictures and notes, each with its slide number', async (t) => {
      const created = await upload('briefing.odp', BRIEFING, 'application/octet-stream');
      t.equal(created.statusCode, 202, created.body);
      t.equal(created.json().content_type, ODP_TYPE, 'recognised by its content');
      const [document] = await waitForIngestion(app, 'slides', admin);
      t.equal(document!.status, 'ready', document!.error ?? '');
      const id = created.json().id as string;
      t.match(await documentOf(id), { title: 'Harbour Operations 2026', source_metadata: { slides: 3 } }, 'no meta.xml: the first slide\'s title');

      const elements = (await app.inject({ url: `/v1/collections/slides/documents/${id}/elements`, headers: admin })).json().data as Element[];
      t.same(elements.map((element) => [element.page, element.type, element.text, element.heading_path]), [
        [1, 'heading', 'Harbour Operations 2026', []],
        [1, 'paragraph', 'Annual briefing for the port board', ['Harbour Operations 2026']],
        [2, 'heading', 'Berth allocation', []],
        [2, 'list', '- Container ships use berths 1 to 4\n  - Berth 3 is closed for dredging in March\n- Ferries use the north quay', ['Berth allocation']],
        [2, 'paragraph', 'Source: harbour master', ['Berth allocation']],
        [2, 'paragraph', 'Mention the dredging contract.', ['Berth allocation']],
        [3, 'heading', 'Tariffs', []],
        [3, 'table', 'Vessel | Fee per day\nContainer ship | 1,200 EUR', ['Tariffs']],
        [3, 'image', 'Chart of fees since 2020', ['Tariffs']],
        [3, 'paragraph', 'Rates reviewed yearly', ['Tariffs']],
      ], 'no footer or slide number; a grouped shape read through');
      t.equal(elements[5]!.metadata.speaker_notes, true, 'the notes say they are notes');
      t.notOk(elements[4]!.metadata.speaker_notes);
      const chart = elements.find((element) => element.type === 'image')!;
      t.same((await app.inject({ url: chart.content_url!, headers: admin })).rawPayload, buildPng(), 'the picture as it was in the deck');

      const query = await app.inject({ method: 'POST', url: '/v1/collections/slides/query', headers: admin, payload: { query: 'dredging contract', search_mode: 'keyword' } });
      t.match(query.json().results[0], { document_title: 'Harbour Operations 2026', metadata: { page: 2, heading_path: ['Berth allocation'] } }, 'a result can say which slide');
    });

    await t.test('a damaged presentation fails naming the stage', async (t) => {
      const truncated = await upload('truncated.odp', BRIEFING.subarray(0, Math.floor(BRIEFING.length / 2)));
      t.equal(truncated.statusCode, 202, truncated.body);
      const hollow = await upload('hollow.odp', buildZip([{ name: 'mimetype', data: Buffer.from(ODP_TYPE), stored: true }]));
      t.equal(hollow.statusCode, 202, hollow.body);
      await waitForIngestion(app, 'slides', admin);
      t.match(await documentOf(truncated.json().id), { status: 'failed', error: /^parsing failed: ODP zip container: the archive is truncated or damaged \(/ });
      t.match(await documentOf(hollow.json().id), { status: 'failed', error: 'parsing failed: ODP: the archive holds no slides (content.xml)' });
    });
  });
}
