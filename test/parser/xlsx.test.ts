/**
 * Excel workbooks through the API: a heading per sheet, each row an element of "column: value"
 * lines with its sheet and row, dates as ISO dates; empty sheets and rows left out; the title and
 * properties of docProps/core.xml; damaged workbooks fail naming the stage.
 */
import t from 'tap';
import writeXlsxFile from 'write-excel-file/node';
import { inspectZipArchive, officeDocumentLimits } from '../../src/parsing/zip-inspection.js';
import { buildZip } from '../support/document-fixtures.js';
import { adminTestApp, createTestCollection, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';

const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

interface Element { type: string; text: string; heading_path: string[]; metadata: Record<string, unknown> }

async function fleetWorkbook(): Promise<Buffer> {
  const header = ['Vessel', 'Length (m)', 'Commissioned', 'In service'].map((value) => ({ value, fontWeight: 'bold' as const }));
  return writeXlsxFile([
    {
      sheet: 'Vessels',
      data: [
        header,
        [{ value: 'Morning Star' }, { value: 142.5 }, { value: new Date(Date.UTC(2019, 2, 1)), format: 'yyyy-mm-dd' }, { value: true }],
        [{ value: 'Tern' }, { value: 38 }, { value: new Date(Date.UTC(2024, 10, 5)), format: 'yyyy-mm-dd' }, { value: false }],
      ],
    },
    { sheet: 'Blank', data: [[null]] },
    { sheet: 'Notes', data: [[{ value: 'Note' }], [{ value: 'Dredging of berth 3 starts in March.' }], [{ value: 'The Tern is laid up for repairs.' }]] },
  ]).toBuffer();
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    const documentOf = async (id: string) => (await app.inject({ url: `/v1/collections/sheets/documents/${id}`, headers: admin })).json();
    const elementsOf = async (id: string) => (await app.inject({ url: `/v1/collections/sheets/documents/${id}/elements`, headers: admin })).json().data as Element[];
    await createTestCollection(app, admin, { name: 'sheets' });
    const upload = (filename: string, content: Buffer, contentType = XLSX_TYPE) => uploadDocument(app, admin, 'sheets', { filename, content, contentType });

    await t.test('a workbook: a heading per sheet, rows as "column: value" lines, dates as ISO dates', async (t) => {
      const workbook = await fleetWorkbook();
      const created = await upload('fleet.xlsx', workbook, 'application/octet-stream');
      t.equal(created.statusCode, 202, created.body);
      t.equal(created.json().content_type, XLSX_TYPE, 'recognised without its content type');
      const [document] = await waitForIngestion(app, 'sheets', admin);
      t.equal(document?.status, 'ready', document?.error ?? '');
      const id = created.json().id as string;
      t.match((await documentOf(id)).source_metadata, { sheets: ['Vessels', 'Notes'], rows: 4 }, 'the empty sheet is left out');

      const elements = await elementsOf(id);
      t.same(elements.map((element) => [element.type, element.text, element.heading_path]), [
        ['heading', 'Vessels', []],
        ['table', 'Vessel: Morning Star\nLength (m): 142.5\nCommissioned: 2019-03-01\nIn service: true', ['Vessels']],
        ['table', 'Vessel: Tern\nLength (m): 38\nCommissioned: 2024-11-05\nIn service: false', ['Vessels']],
        ['heading', 'Notes', []],
        ['table', 'Note: Dredging of berth 3 starts in March.', ['Notes']],
        ['table', 'Note: The Tern is laid up for repairs.', ['Notes']],
      ]);
      t.match(elements[2]!.metadata, { sheet: 'Vessels', row: 2, columns: ['Vessel', 'Length (m)', 'Commissioned', 'In service'] });
      t.match(elements[5]!.metadata, { sheet: 'Notes', row: 2 });

      const query = await app.inject({ method: 'POST', url: '/v1/collections/sheets/query', headers: admin, payload: { query: 'Morning Star length', search_mode: 'keyword' } });
      t.equal(query.statusCode, 200, query.body);
      t.match(query.json().results[0], { text: /Length \(m\): 142\.5/, metadata: { heading_path: ['Vessels'] } }, 'a row found says what its numbers are');
    });

    await t.test('a workbook\'s core properties give its title and author; an empty row is no element', async (t) => {
      const written = await writeXlsxFile([
        { sheet: 'Log', data: [[{ value: 'Entry' }], [{ value: 'Pilot boarded at dawn.' }], [null], [{ value: 'Fog lifted by noon.' }]] },
      ]).toBuffer();
      // write-excel-file writes no docProps/core.xml: Excel's is added beside its parts.
      const parts = await inspectZipArchive(written, 'XLSX', officeDocumentLimits, () => true);
      const core = '<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        + 'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Harbour log</dc:title><dc:creator>Ada</dc:creator></cp:coreProperties>';
      const workbook = buildZip([...[...parts].map(([name, data]) => ({ name, data })), { name: 'docProps/core.xml', data: Buffer.from(core) }]);
      const created = await upload('log.xlsx', workbook);
      t.equal(created.statusCode, 202, created.body);
      await waitForIngestion(app, 'sheets', admin);
      const id = created.json().id as string;
      const document = await documentOf(id);
      t.equal(document.status, 'ready', document.error ?? '');
      t.equal(document.title, 'Harbour log');
      t.match(document.source_metadata, { author: 'Ada', sheets: ['Log'], rows: 2 });
      const elements = await elementsOf(id);
      t.same(elements.map((element) => element.text), ['Log', 'Entry: Pilot boarded at dawn.', 'Entry: Fog lifted by noon.']);
    });

    await t.test('a damaged workbook fails naming the stage', async (t) => {
      const workbook = await fleetWorkbook();
      const truncated = await upload('truncated.xlsx', workbook.subarray(0, Math.floor(workbook.length / 2)));
      t.equal(truncated.statusCode, 202, truncated.body);
      await waitForIngestion(app, 'sheets', admin);
      const failed = await documentOf(truncated.json().id);
      t.equal(failed.status, 'failed');
      t.match(failed.error, /^parsing failed: XLSX zip container: the archive is truncated or damaged \(/);

      const broken = await upload('broken.xlsx', buildZip([
        { name: '[Content_Types].xml', data: Buffer.from('<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>') },
        { name: 'xl/workbook.xml', data: Buffer.from('<workbook>never closed') },
      ]));
      t.equal(broken.statusCode, 202, broken.body);
      await waitForIngestion(app, 'sheets', admin);
      const unreadable = await documentOf(broken.json().id);
      t.equal(unreadable.status, 'failed');
      t.match(unreadable.error, /^parsing failed: XLSX content: ./, 'a workbook the reader cannot make sense of');
    });
  });
}
