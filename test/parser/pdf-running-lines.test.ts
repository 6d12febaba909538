/**
 * Through the API: headings atop every page that differ only by a number ("Chapter 1/2/3 Lamp
 * Maintenance", "Step 2/3", "Annual Report 2021/2022/2023") are headings, not running heads; they
 * were dropped with their text, so a query for "Chapter 2 Lamp Maintenance" found nothing and
 * the body of every page fell under the wrong heading. Running heads and feet still go: a header
 * identical on every page (even at a heading size), page numbers in their usual forms, and a
 * small head whose number follows the page ("Report 2024 — page 3").
 */
import t from 'tap';
import { PDFDocument, StandardFonts, type PDFFont } from 'pdf-lib';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

interface Line {
  text: string;
  y: number;
  size: number;
  bold?: boolean;
}

/** One US Letter page (792 pt high: the top and bottom 8% are above y 728 and below y 63) per entry. */
async function pdfOfLines(pages: Line[][]): Promise<Buffer> {
  const pdf = await PDFDocument.create({ updateMetadata: false });
  const regular = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  for (const lines of pages) {
    const page = pdf.addPage([612, 792]);
    for (const line of lines) {
      const font: PDFFont = line.bold ? bold : regular;
      page.drawText(line.text, { x: 72, y: line.y, size: line.size, font });
    }
  }
  return Buffer.from(await pdf.save());
}

const body = (y: number, ...texts: string[]): Line[] => texts.map((text, index) => ({ text, y: y - index * 14, size: 11 }));

const lampManual = [
  [
    { text: 'Lamp Maintenance Manual', y: 775, size: 14, bold: true },
    { text: 'Chapter 1 Lamp Maintenance', y: 752, size: 22, bold: true },
    { text: 'Contents', y: 732, size: 16, bold: true },
    ...body(700, 'Step 2 Remove the cover . . . . . . . . 2', 'Step 3 Fit the new lamp . . . . . . . . 3'),
    ...body(650, 'Every lighthouse lamp is checked each spring by the keeper on', 'duty, who records its burning hours in the station logbook.'),
    { text: 'Report 2024 — page 1', y: 45, size: 9 },
    { text: '1', y: 30, size: 10 },
  ],
  [
    { text: 'Lamp Maintenance Manual', y: 775, size: 14, bold: true },
    { text: 'Chapter 2 Lamp Maintenance', y: 752, size: 22, bold: true },
    { text: 'Step 2 Remove the cover', y: 732, size: 16, bold: true },
    ...body(700, 'Unscrew the four brass bolts and lift the cover off the lantern', 'with both hands, keeping the gasket clean and dry.'),
    { text: 'Report 2024 — page 2', y: 45, size: 9 },
    { text: 'Page 2 of 3', y: 30, size: 10 },
  ],
  [
    { text: 'Lamp Maintenance Manual', y: 775, size: 14, bold: true },
    { text: 'Chapter 3 Lamp Maintenance', y: 752, size: 22, bold: true },
    { text: 'Step 3 Fit the new lamp', y: 732, size: 16, bold: true },
    ...body(700, 'Seat the new lamp in its holder, refit the cover and light the', 'lamp to check that the beam turns evenly through the night.'),
    { text: 'Report 2024 — page 3', y: 45, size: 9 },
    { text: '- 3 -', y: 30, size: 10 },
  ],
];

const reports = [
  [
    { text: 'Harbour Authority', y: 755, size: 26, bold: true },
    ...body(700, 'The harbour authority publishes one report a year on the traffic', 'of the port, the state of its quays and the work done on them.'),
  ],
  ...[2021, 2022, 2023].map((year, index) => [
    { text: 'Harbour Authority', y: 775, size: 9 },
    { text: `Annual Report ${year}`, y: 750, size: 22, bold: true },
    ...body(700, `In ${year} the port handled more ships than the year before, and`, 'the dredging of the inner channel went on through the winter.'),
    { text: String(index + 2), y: 30, size: 10 },
  ]),
];

type Element = { type: string; text: string; page: number; heading_path: string[]; metadata: { level?: number } };

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'lamps' });
    const upload = async (filename: string, pdf: Buffer) => {
      const multipart = multipartUpload([{ filename, content: pdf, contentType: 'application/pdf' }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/lamps/documents', headers: { ...admin, ...multipart.headers }, payload: multipart.payload });
      t.equal(response.statusCode, 202, `${filename} accepted`);
      return response.json().id as string;
    };
    const manual = await upload('lamps.pdf', await pdfOfLines(lampManual));
    const annual = await upload('reports.pdf', await pdfOfLines(reports));
    for (const document of await waitForIngestion(app, 'lamps', admin)) t.match(document, { status: 'ready', error: null }, document.filename);
    const get = async (url: string) => (await app.inject({ url: `/v1/collections/lamps/documents/${url}`, headers: admin })).json();
    const outline = async (id: string) => ((await get(`${id}/elements`)).data as Element[])
      .map((element) => [element.type, element.page, element.text, element.heading_path, element.metadata.level ?? null]);

    await t.test('headings that differ only by a number are headings; running heads, feet and page numbers are not', async (t) => {
      t.same(await outline(manual), [
        ['heading', 1, 'Chapter 1 Lamp Maintenance', [], 1],
        ['heading', 1, 'Contents', ['Chapter 1 Lamp Maintenance'], 2],
        ['paragraph', 1, 'Step 2 Remove the cover . . . . . . . . 2 Step 3 Fit the new lamp . . . . . . . . 3', ['Chapter 1 Lamp Maintenance', 'Contents'], null],
        ['paragraph', 1, 'Every lighthouse lamp is checked each spring by the keeper on duty, who records its burning hours in the station logbook.', ['Chapter 1 Lamp Maintenance', 'Contents'], null],
        ['heading', 2, 'Chapter 2 Lamp Maintenance', [], 1],
        ['heading', 2, 'Step 2 Remove the cover', ['Chapter 2 Lamp Maintenance'], 2],
        ['paragraph', 2, 'Unscrew the four brass bolts and lift the cover off the lantern with both hands, keeping the gasket clean and dry.', ['Chapter 2 Lamp Maintenance', 'Step 2 Remove the cover'], null],
        ['heading', 3, 'Chapter 3 Lamp Maintenance', [], 1],
        ['heading', 3, 'Step 3 Fit the new lamp', ['Chapter 3 Lamp Maintenance'], 2],
        ['paragraph', 3, 'Seat the new lamp in its holder, refit the cover and light the lamp to check that the beam turns evenly through the night.', ['Chapter 3 Lamp Maintenance', 'Step 3 Fit the new lamp'], null],
      ], 'the header repeated at 14 pt, "Report 2024 — page N" and the page numbers "1", "Page 2 of 3", "- 3 -" are gone');
      t.equal((await get(manual)).title, 'Chapter 1 Lamp Maintenance', 'the first level-1 heading names the document');
      const chunks = (await get(`${manual}/chunks?limit=500`)).data as Array<{ text: string; metadata: { page: number; heading_path: string[] } }>;
      t.match(chunks.find((chunk) => chunk.text.includes('brass bolts'))?.metadata, { page: 2, heading_path: ['Chapter 2 Lamp Maintenance', 'Step 2 Remove the cover'] });
      t.notOk(chunks.some((chunk) => /Lamp Maintenance Manual|Report 2024|Page 2 of 3/.test(chunk.text)), 'no running line reaches a chunk');
    });

    await t.test('a keyword query finds a heading that differs from the others only by its number', async (t) => {
      const response = await app.inject({ method: 'POST', url: '/v1/collections/lamps/query', headers: admin, payload: { query: 'Chapter 2 Lamp Maintenance', search_mode: 'keyword', skip_cache: true } });
      const results = response.json().results as Array<{ document_id: string; text: string; metadata: { page: number } }>;
      t.match(results.find((result) => result.text.includes('Chapter 2 Lamp Maintenance')), { document_id: manual, metadata: { page: 2 } }, 'the chunk of page 2 is found');
    });

    await t.test('years that follow the page numbers are headings; a title atop page 1 is not the running head repeating it', async (t) => {
      t.same(await outline(annual), [
        ['heading', 1, 'Harbour Authority', [], 1],
        ['paragraph', 1, 'The harbour authority publishes one report a year on the traffic of the port, the state of its quays and the work done on them.', ['Harbour Authority'], null],
        ...[2021, 2022, 2023].flatMap((year, index) => [
          ['heading', index + 2, `Annual Report ${year}`, ['Harbour Authority'], 2],
          ['paragraph', index + 2, `In ${year} the port handled more ships than the year before, and the dredging of the inner channel went on through the winter.`, ['Harbour Authority', `Annual Report ${year}`], null],
        ]),
      ]);
    });
  });
}
