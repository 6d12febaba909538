/**
 * OpenDocument text through the API: headings with their levels, paragraphs, footnotes, nested
 * lists, tables with header rows, sections, pictures and text boxes in document order; tracked
 * deletions, comments and the table of contents left out; title and properties from meta.xml;
 * damaged files fail naming the stage; OpenDocument drawings are refused.
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { buildPng, buildZip } from '../support/document-fixtures.js';
import { buildOdt } from '../support/open-document-fixture.js';
import { adminTestApp, createTestCollection, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';

const ODT_TYPE = 'application/vnd.oasis.opendocument.text';

const RULES = buildOdt({
  meta: '<dc:title>Harbour Rules 2026</dc:title><meta:initial-creator>Port Authority</meta:initial-creator>'
    + '<meta:keyword>harbour</meta:keyword><meta:keyword>berths</meta:keyword><meta:creation-date>2026-01-15T09:30:00.123456789</meta:creation-date>',
  pictures: { 'chart.png': buildPng() },
  body: [
    '<text:tracked-changes><text:changed-region text:id="c1"><text:deletion><office:change-info><dc:creator>Editor</dc:creator></office:change-info>',
    '<text:p>Anchoring is free on Sundays.</text:p></text:deletion></text:changed-region></text:tracked-changes>',
    '<text:table-of-content text:name="Contents"><text:index-body><text:p>Harbour rules 1</text:p><text:p>Berths 2</text:p></text:index-body></text:table-of-content>',
    '<text:h text:outline-level="1">Harbour rules</text:h>',
    '<text:p>Ships <text:span>must</text:span> report<text:s text:c="3"/>24 hours<text:tab/>before<text:line-break/>arrival.',
    '<text:note text:note-class="footnote"><text:note-citation>1</text:note-citation><text:note-body><text:p>Pilots may waive this for ferries.</text:p></text:note-body></text:note>',
    '<office:annotation><dc:creator>Reviewer</dc:creator><text:p>Check with the pilots</text:p></office:annotation><text:change-start text:change-id="c1"/></text:p>',
    '<text:h text:outline-level="2">Berths</text:h>',
    '<text:list><text:list-item><text:p>Container ships use berths 1 to 4</text:p>',
    '<text:list><text:list-item><text:p>Berth 3 is closed in March</text:p></text:list-item></text:list></text:list-item>',
    '<text:list-item><text:p>Ferries use the north quay</text:p></text:list-item></text:list>',
    '<table:table table:name="Fees"><table:table-column table:number-columns-repeated="2"/>',
    '<table:table-header-rows><table:table-row><table:table-cell><text:p>Vessel</text:p></table:table-cell><table:table-cell><text:p>Fee per day</text:p></table:table-cell></table:table-row></table:table-header-rows>',
    '<table:table-row><table:table-cell><text:p>Container ship</text:p></table:table-cell><table:table-cell><text:p>1,200 EUR</text:p></table:table-cell></table:table-row>',
    '<table:table-row table:number-rows-repeated="1000"><table:table-cell table:number-columns-repeated="1024"/></table:table-row></table:table>',
    '<text:section text:name="Annex"><text:h text:outline-level="2">Annex</text:h><text:p>Dredging runs from May to July.</text:p></text:section>',
    '<text:p><draw:frame draw:name="Chart"><draw:image xlink:href="Pictures/chart.png"/><svg:title>Chart of fees since 2020</svg:title></draw:frame></text:p>',
    '<text:p><draw:frame draw:name="Box"><draw:text-box><text:p>Source: harbour master</text:p></draw:text-box></draw:frame></text:p>',
  ].join(''),
});

interface Element { type: string; text: string; heading_path: string[]; metadata: Record<string, unknown>; content_url?: string | null }

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    // Multimodal: the pictures of image elements are kept and served.
    await createTestCollection(app, admin, { name: 'texts', multimodal_enabled: true });
    const upload = (filename: string, content: Buffer, contentType = ODT_TYPE) => uploadDocument(app, admin, 'texts', { filename, content, contentType });
    const documentOf = async (id: string) => (await app.inject({ url: `/v1/collections/texts/documents/${id}`, headers: admin })).json();
    const keyword = async (query: string) => (await app.inject({ method: 'POST', url: '/v1/collections/texts/query', headers: admin, payload: { query, search_mode: 'keyword' } })).json();

    await t.test('a document: headings, paragraphs, footnotes, lists, tables, sections, pictures and text boxes in order', async (t) => {
      const created = await upload('rules.odt', RULES);
      t.equal(created.statusCode, 202, created.body);
      const untyped = await upload('letter.odt', buildOdt({ body: '<text:p>Dear captain,</text:p>' }), 'application/octet-stream');
      t.equal(untyped.statusCode, 202, untyped.body);
      t.equal(untyped.json().content_type, ODT_TYPE, 'recognised without its content type');
      const documents = await waitForIngestion(app, 'texts', admin);
      t.same(documents.map((document) => document.status), ['ready', 'ready'], JSON.stringify(documents.map((document) => document.error)));

      const id = created.json().id as string;
      const document = await documentOf(id);
      t.equal(document.title, 'Harbour Rules 2026', 'the title of meta.xml');
      t.match(document.source_metadata, { author: 'Port Authority', keywords: ['harbour', 'berths'], created_at: '2026-01-15T09:30:00.123Z' });

      const elements = (await app.inject({ url: `/v1/collections/texts/documents/${id}/elements`, headers: admin })).json().data as Element[];
      t.same(elements.map((element) => [element.type, element.text, element.heading_path]), [
        ['heading', 'Harbour rules', []],
        ['paragraph', 'Ships must report 24 hours before arrival.', ['Harbour rules']],
        ['paragraph', 'Pilots may waive this for ferries.', ['Harbour rules']],
        ['heading', 'Berths', ['Harbour rules']],
        ['list', '- Container ships use berths 1 to 4\n  - Berth 3 is closed in March\n- Ferries use the north quay', ['Harbour rules', 'Berths']],
        ['table', 'Vessel | Fee per day\nContainer ship | 1,200 EUR', ['Harbour rules', 'Berths']],
        ['heading', 'Annex', ['Harbour rules']],
        ['paragraph', 'Dredging runs from May to July.', ['Harbour rules', 'Annex']],
        ['image', 'Chart of fees since 2020', ['Harbour rules', 'Annex']],
        ['paragraph', 'Source: harbour master', ['Harbour rules', 'Annex']],
      ], 'no deleted text, comment or table of contents; the repeated empty rows left out');
      const chart = elements.find((element) => element.type === 'image')!;
      t.match(chart, { metadata: { content_type: 'image/png', width: 32, height: 24 }, content_url: /\/content$/ }, 'a picture keeps its bytes, and its size is read');
      const picture = await app.inject({ url: chart.content_url!, headers: admin });
      t.same(picture.rawPayload, buildPng(), 'the picture as it was in the document');

      t.match((await keyword('ferry fee per day')).results[0], { document_title: 'Harbour Rules 2026', metadata: { heading_path: ['Harbour rules', 'Berths'] } });
      t.same((await keyword('anchoring sundays')).results, [], 'a tracked deletion is not the document\'s text');
      t.same((await keyword('reviewer pilots check')).results.filter((result: { text: string }) => result.text.includes('Check')), [], 'nor is a comment');
    });

    await t.test('a damaged document fails naming the stage; a drawing is refused', async (t) => {
      const truncated = await upload('truncated.odt', RULES.subarray(0, Math.floor(RULES.length / 2)));
      t.equal(truncated.statusCode, 202, truncated.body);
      const withoutContent = await upload('hollow.odt', buildZip([{ name: 'mimetype', data: Buffer.from(ODT_TYPE), stored: true }]));
      t.equal(withoutContent.statusCode, 202, withoutContent.body);
      await waitForIngestion(app, 'texts', admin);
      t.match(await documentOf(truncated.json().id), { status: 'failed', error: /^parsing failed: ODT zip container: the archive is truncated or damaged \(/ });
      t.match(await documentOf(withoutContent.json().id), { status: 'failed', error: 'parsing failed: ODT: the archive holds no document text (content.xml)' });

      const drawing = buildZip([{ name: 'mimetype', data: Buffer.from('application/vnd.oasis.opendocument.graphics'), stored: true }]);
      assertError(t, await upload('plan.odg', drawing, 'application/octet-stream'), 415, /"plan\.odg" is ODG data \(application\/vnd\.oasis\.opendocument\.graphics\) by its content; supported: .*\.odt/, 'a drawing');
      assertError(t, await upload('photo.odt', buildPng(), 'image/png'), 415, /"photo\.odt" is PNG data/, 'a picture named .odt');
    });
  });
}
