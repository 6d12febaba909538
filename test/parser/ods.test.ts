/**
 * OpenDocument spreadsheets through the API: a heading per sheet, rows as "column: value" lines by
 * their stored values, repeated rows and columns as Calc writes them (content repeated, the unused
 * area skipped), comments left out; damaged files fail naming the stage.
 */
import t from 'tap';
import { buildZip } from '../support/document-fixtures.js';
import { buildOds } from '../support/open-document-fixture.js';
import { adminTestApp, createTestCollection, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';

const ODS_TYPE = 'application/vnd.oasis.opendocument.spreadsheet';

const text = (value: string, extra = '') => `<table:table-cell office:value-type="string"><text:p>${value}</text:p>${extra}</table:table-cell>`;

const FEES = buildOds({
  meta: '<dc:title>Harbour fees</dc:title><dc:creator>Port Authority</dc:creator>',
  body: [
    '<table:table table:name="Fees"><table:table-column table:number-columns-repeated="1024"/>',
    `<table:table-row>${['Vessel', 'Fee per day', 'Share', 'Since', 'Active'].map((name) => text(name)).join('')}<table:table-cell table:number-columns-repeated="1019"/></table:table-row>`,
    '<table:table-row>',
    text('Container ship', '<office:annotation><dc:creator>Clerk</dc:creator><text:p>Check the rate</text:p></office:annotation>'),
    '<table:table-cell office:value-type="currency" office:currency="EUR" office:value="1200"><text:p>1.200,00 €</text:p></table:table-cell>',
    '<table:table-cell office:value-type="percentage" office:value="0.25"><text:p>25%</text:p></table:table-cell>',
    '<table:table-cell office:value-type="date" office:date-value="2024-03-01"><text:p>01.03.24</text:p></table:table-cell>',
    '<table:table-cell office:value-type="boolean" office:boolean-value="true"><text:p>TRUE</text:p></table:table-cell>',
    '</table:table-row>',
    '<table:table-row table:number-rows-repeated="2">',
    text('Ferry'),
    '<table:table-cell office:value-type="float" office:value="300"><text:p>300</text:p></table:table-cell>',
    '<table:table-cell table:number-columns-repeated="2"/>',
    '<table:table-cell office:value-type="boolean" office:boolean-value="false"><text:p>FALSE</text:p></table:table-cell>',
    '</table:table-row>',
    '<table:table-row table:number-rows-repeated="1048572"><table:table-cell table:number-columns-repeated="1024"/></table:table-row></table:table>',
    '<table:table table:name="Empty"><table:table-row table:number-rows-repeated="1000"><table:table-cell table:number-columns-repeated="1024"/></table:table-row></table:table>',
    `<table:table table:name="Notes"><table:table-row>${text('Dredging from May</text:p><text:p>to July')}</table:table-row></table:table>`,
  ].join(''),
});

interface Element { type: string; text: string; heading_path: string[]; metadata: Record<string, unknown> }

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'sheets' });
    const upload = (filename: string, content: Buffer, contentType = ODS_TYPE) => uploadDocument(app, admin, 'sheets', { filename, content, contentType });
    const documentOf = async (id: string) => (await app.inject({ url: `/v1/collections/sheets/documents/${id}`, headers: admin })).json();

    await t.test('sheets, rows by their stored values, repeats as Calc writes them', async (t) => {
      const created = await upload('fees.ods', FEES, 'application/octet-stream');
      t.equal(created.statusCode, 202, created.body);
      t.equal(created.json().content_type, ODS_TYPE, 'recognised by its content');
      const [document] = await waitForIngestion(app, 'sheets', admin);
      t.equal(document!.status, 'ready', document!.error ?? '');
      const id = created.json().id as string;
      t.match(await documentOf(id), { title: 'Harbour fees', source_metadata: { author: 'Port Authority', sheets: ['Fees', 'Notes'], rows: 4 } });

      const elements = (await app.inject({ url: `/v1/collections/sheets/documents/${id}/elements`, headers: admin })).json().data as Element[];
      const columns = ['Vessel', 'Fee per day', 'Share', 'Since', 'Active'];
      t.same(elements.map((element) => [element.type, element.text, element.heading_path, element.metadata]), [
        ['heading', 'Fees', [], { level: 1 }],
        ['table', 'Vessel: Container ship\nFee per day: 1200\nShare: 0.25\nSince: 2024-03-01\nActive: true', ['Fees'], { sheet: 'Fees', row: 1, columns }],
        ['table', 'Vessel: Ferry\nFee per day: 300\nActive: false', ['Fees'], { sheet: 'Fees', row: 2, columns }],
        ['table', 'Vessel: Ferry\nFee per day: 300\nActive: false', ['Fees'], { sheet: 'Fees', row: 3, columns }],
        ['heading', 'Notes', [], { level: 1 }],
        ['table', 'Dredging from May to July', ['Notes'], { sheet: 'Notes', row: 1 }],
      ], 'the stored values, not their display; the empty sheet and the unused area left out; no comment');

      const ferry = await app.inject({ method: 'POST', url: '/v1/collections/sheets/query', headers: admin, payload: { query: 'ferry fee', search_mode: 'keyword' } });
      t.match(ferry.json().results[0], { document_title: 'Harbour fees', text: /Vessel: Ferry/, metadata: { heading_path: ['Fees'] } });
      const notesOnly = await app.inject({ method: 'POST', url: '/v1/collections/sheets/query', headers: admin, payload: { query: 'ferry dredging', search_mode: 'keyword', filters: { heading_path: 'Notes' } } });
      t.same(notesOnly.json().results.map((result: { text: string }) => result.text), ['Notes\n\nDredging from May to July'], 'a sheet\'s rows by its heading: filters {heading_path: "Notes"}');
      const comment = await app.inject({ method: 'POST', url: '/v1/collections/sheets/query', headers: admin, payload: { query: 'check the rate clerk', search_mode: 'keyword' } });
      t.same(comment.json().results, [], 'a comment is not the sheet\'s text');
    });

    await t.test('a damaged spreadsheet fails naming the stage', async (t) => {
      const truncated = await upload('truncated.ods', FEES.subarray(0, Math.floor(FEES.length / 2)));
      t.equal(truncated.statusCode, 202, truncated.body);
      const hollow = await upload('hollow.ods', buildZip([{ name: 'mimetype', data: Buffer.from(ODS_TYPE), stored: true }]));
      t.equal(hollow.statusCode, 202, hollow.body);
      await waitForIngestion(app, 'sheets', admin);
      t.match(await documentOf(truncated.json().id), { status: 'failed', error: /^parsing failed: ODS zip container: the archive is truncated or damaged \(/ });
      t.match(await documentOf(hollow.json().id), { status: 'failed', error: 'parsing failed: ODS: the archive holds no sheets (content.xml)' });
    });
  });
}
