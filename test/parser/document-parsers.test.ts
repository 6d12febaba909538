import t from 'tap';
import { csvParserPlugin } from '../../plugins/parser/csv/index.js';
import { docxParserPlugin } from '../../plugins/parser/docx/index.js';
import { jsonParserPlugin } from '../../plugins/parser/json/index.js';
import { pdfParserPlugin } from '../../plugins/parser/pdf/index.js';
import type { DocumentElement, ParsedDocument, PluginDefinition } from '../../src/plugins.js';
import { declaredSizeProblem, officeDocumentLimits } from '../../src/parsing/zip-inspection.js';
import {
  buildDocx, buildPdf, buildPng, buildZip, buildZipBomb, sampleCsv, sampleJson, sampleJsonl, sampleTsv,
} from '../support/document-fixtures.js';

async function parse(plugin: PluginDefinition<'parser'>, filename: string, content: string | Buffer, contentType?: string): Promise<ParsedDocument> {
  const parser = plugin.create({}, {});
  const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return parser.parse({ filename, contentType: contentType ?? parser.contentTypes[0]!, data });
}

const outline = (elements: DocumentElement[]) => elements.map((element) => {
  const row: unknown[] = [element.type, element.text, element.headingPath];
  if (element.level !== undefined) row.push(element.level);
  return row;
});

async function parseFailure(plugin: PluginDefinition<'parser'>, filename: string, content: Buffer | string): Promise<string> {
  try {
    await parse(plugin, filename, content);
  } catch (error) {
    return (error as Error).message;
  }
  return 'parsed without an error';
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

t.test('pdf: text per page, headings from font sizes, Info title, pictures as PNG elements', async (t) => {
  const pdf = await buildPdf({
    title: 'Harbour Manual',
    pages: [
      { heading: 'Introduction', paragraphs: ['The harbour master keeps the logbook of every ship that enters the port; this sentence is long enough to wrap onto a second line of the page.', 'Second paragraph on page one.'] },
      { subheading: 'Pilots', paragraphs: ['Pilots guide ships through the channel.'], image: true },
      { heading: 'Safety', paragraphs: ['Lifebuoys hang at every berth.'] },
    ],
  });
  const document = await parse(pdfParserPlugin, 'manual.pdf', pdf);
  t.equal(document.title, 'Harbour Manual', 'Info dictionary title');
  t.same(document.elements.map((element) => [element.type, element.page, element.text, element.headingPath, element.level]), [
    ['heading', 1, 'Introduction', [], 1],
    ['paragraph', 1, 'The harbour master keeps the logbook of every ship that enters the port; this sentence is long enough to wrap onto a second line of the page.', ['Introduction'], undefined],
    ['paragraph', 1, 'Second paragraph on page one.', ['Introduction'], undefined],
    ['heading', 2, 'Pilots', ['Introduction'], 2],
    ['paragraph', 2, 'Pilots guide ships through the channel.', ['Introduction', 'Pilots'], undefined],
    ['image', 2, '', ['Introduction', 'Pilots'], undefined],
    ['heading', 3, 'Safety', [], 1],
    ['paragraph', 3, 'Lifebuoys hang at every berth.', ['Safety'], undefined],
  ]);
  const image = document.elements.find((element) => element.type === 'image')!;
  t.equal(image.image?.contentType, 'image/png');
  t.same(image.image?.data.subarray(0, 8), PNG_SIGNATURE, 'PNG bytes');
  t.same(image.image?.data, buildPng(), 'the embedded picture comes back pixel for pixel');
  t.same(image.metadata, { width: 32, height: 24 });
  t.same(document.metadata, { pages: 3 });

  const untitled = await parse(pdfParserPlugin, 'x.pdf', await buildPdf({ pages: [{ heading: 'Only Chapter', paragraphs: ['Body text here.'] }] }));
  t.equal(untitled.title, 'Only Chapter', 'no Info title: the first level-1 heading');

  const pictureOnly = await parse(pdfParserPlugin, 'album.pdf', await buildPdf({
    pages: [{ heading: 'Album', paragraphs: ['First page.'] }, { paragraphs: [], image: true }, { paragraphs: ['Last page.'] }],
  }));
  t.same(pictureOnly.elements.map((element) => [element.type, element.page, element.headingPath]), [
    ['heading', 1, []], ['paragraph', 1, ['Album']], ['image', 2, ['Album']], ['paragraph', 3, ['Album']],
  ], 'a page holding only a picture keeps its place');
});

t.test('pdf: running heads, feet and page numbers are dropped; hyphenated words joined', async (t) => {
  const { PDFDocument, StandardFonts } = await import('pdf-lib');
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (let number = 1; number <= 4; number++) {
    const page = pdf.addPage([612, 792]);
    page.drawText('Annual Report 2024', { x: 72, y: 760, size: 9, font });
    page.drawText(`Body of page ${number} mentions an inter-`, { x: 72, y: 600, size: 11, font });
    page.drawText('national treaty.', { x: 72, y: 586, size: 11, font });
    page.drawText(String(number), { x: 300, y: 30, size: 9, font });
  }
  const document = await parse(pdfParserPlugin, 'report.pdf', Buffer.from(await pdf.save()));
  t.same(document.elements.map((element) => [element.page, element.text]), [1, 2, 3, 4].map((number) => [number, `Body of page ${number} mentions an international treaty.`]));
});

t.test('pdf: damaged, empty and non-PDF data fail naming the stage', async (t) => {
  t.match(await parseFailure(pdfParserPlugin, 'bad.pdf', '%PDF-1.7\nnot really a pdf'), /^PDF document structure: the file is damaged or not a PDF \(Invalid PDF structure\)$/);
  const whole = await buildPdf({ pages: [{ paragraphs: ['text'] }] });
  t.match(await parseFailure(pdfParserPlugin, 'cut.pdf', whole.subarray(0, Math.floor(whole.length / 3))), /^PDF document structure: /, 'truncated');
  t.match(await parseFailure(pdfParserPlugin, 'empty.pdf', Buffer.alloc(0)), /^PDF: the file is empty$/);
});

t.test('docx: headings with levels and paths, lists, table, picture, core title', async (t) => {
  const document = await parse(docxParserPlugin, 'handbook.docx', await buildDocx({ title: 'Handbook & Co', imageAlt: 'Company logo' }));
  t.equal(document.title, 'Handbook & Co', 'docProps/core.xml title, entities decoded');
  t.same(outline(document.elements), [
    ['heading', 'Employee Handbook', [], 1],
    ['paragraph', 'Welcome to the lighthouse company handbook.', ['Employee Handbook']],
    ['heading', 'Benefits', ['Employee Handbook'], 2],
    ['list', '- Dental plan\n- Vision plan', ['Employee Handbook', 'Benefits']],
    ['list', '1. Enrol online\n2. Wait for the card', ['Employee Handbook', 'Benefits']],
    ['heading', 'Costs', ['Employee Handbook'], 2],
    ['table', 'Plan | Monthly cost\nDental | 12 EUR\nVision | 7 EUR', ['Employee Handbook', 'Costs']],
    ['image', 'Company logo', ['Employee Handbook', 'Costs']],
    ['heading', 'Appendix', [], 1],
    ['paragraph', 'Contact the harbour office for questions.', ['Appendix']],
  ]);
  const image = document.elements.find((element) => element.type === 'image')!;
  t.same(image.image, { data: buildPng(), contentType: 'image/png' }, 'the picture bytes as stored in the document');
  t.same(image.metadata, { content_type: 'image/png' });
  const untitled = await parse(docxParserPlugin, 'plain.docx', await buildDocx());
  t.equal(untitled.title, 'Employee Handbook', 'no core title: the first heading 1');
  t.notOk(untitled.elements.some((element) => element.type === 'image'));
});

t.test('docx: truncated archives, zip bombs and non-documents fail before mammoth inflates them', async (t) => {
  const whole = await buildDocx();
  t.match(await parseFailure(docxParserPlugin, 'cut.docx', whole.subarray(0, Math.floor(whole.length / 2))),
    /^DOCX zip container: the archive is truncated or damaged \(End of central directory record signature not found/);
  const bomb = await buildZipBomb();
  const liar = await buildZipBomb({ lying: true });
  t.ok(bomb.length < 200_000, `the bomb is small (${bomb.length} bytes)`);
  const before = process.memoryUsage().rss;
  t.match(await parseFailure(docxParserPlugin, 'bomb.docx', bomb),
    /^DOCX zip container: refused before decompression as a likely zip bomb: word\/document\.xml would inflate \d+× to 64\.0 MB \(limit 100× above 50\.0 MB\)$/);
  t.match(await parseFailure(docxParserPlugin, 'liar.docx', liar),
    /^DOCX zip container: refused as a likely zip bomb: word\/document\.xml inflates past its declared 4096 bytes$/, 'sizes that lie are caught while inflating');
  t.ok(process.memoryUsage().rss - before < 48 * 1024 * 1024, 'neither bomb was inflated into memory');
  t.match(await parseFailure(docxParserPlugin, 'notes.docx', buildZip([{ name: 'notes.txt', data: Buffer.from('hello') }])), /^DOCX content: /, 'a zip without a Word document');
  t.match(await parseFailure(docxParserPlugin, 'empty.docx', Buffer.alloc(0)), /^DOCX: the file is empty$/);
});

t.test('zip limits: entry count, total size and ratio are judged from the declared sizes', async (t) => {
  const entry = (uncompressedSize: number, compressedSize: number, name = 'word/document.xml') => ({ name, compressedSize, uncompressedSize });
  const MB = 1024 * 1024;
  t.equal(declaredSizeProblem([entry(40 * MB, 10_000)], officeDocumentLimits), undefined, 'highly compressed but small: fine');
  t.equal(declaredSizeProblem([entry(80 * MB, 2 * MB)], officeDocumentLimits), undefined, '40× is an ordinary ratio');
  t.match(declaredSizeProblem([entry(60 * MB, 100_000)], officeDocumentLimits), /word\/document\.xml would inflate 629×/);
  t.match(declaredSizeProblem(Array.from({ length: 30 }, (_, index) => entry(20 * MB, 100_000, `part${index}.xml`)), officeDocumentLimits), /^its entries would inflate to 600\.0 MB \(limit 512\.0 MB\)$/, 'many entries under the per-entry bar');
  t.equal(declaredSizeProblem(Array.from({ length: 10 }, (_, index) => entry(4 * MB, 20_000, `p${index}`)), officeDocumentLimits), undefined, '40 MB in all is under the ratio bar');
  t.match(declaredSizeProblem(Array.from({ length: 12 }, (_, index) => entry(5 * MB, 20_000, `p${index}`)), officeDocumentLimits), /^it would inflate 262× to 60\.0 MB \(limit 100× above 50\.0 MB\)$/, 'the archive as a whole');
  t.match(declaredSizeProblem(Array.from({ length: 10_001 }, () => entry(10, 10)), officeDocumentLimits), /10001 entries \(limit 10000\)/);
  // The limits are the last values allowed.
  t.equal(declaredSizeProblem(Array.from({ length: 10_000 }, () => entry(10, 10)), officeDocumentLimits), undefined, '10,000 entries');
  t.equal(declaredSizeProblem([entry(50 * MB, 100_000)], officeDocumentLimits), undefined, 'an entry of 50 MB, however compressed');
  t.equal(declaredSizeProblem([entry(60 * MB, 60 * MB / 100)], officeDocumentLimits), undefined, 'an entry of exactly 100×');
});

t.test('csv and tsv: a row per element as "column: value" lines, header in metadata', async (t) => {
  const document = await parse(csvParserPlugin, 'people.csv', sampleCsv);
  const columns = ['name', 'city', 'joined'];
  t.same(document.elements, [
    { type: 'table', text: 'name: Ada Lovelace\ncity: London\njoined: 1843', headingPath: [], metadata: { row: 1, columns } },
    { type: 'table', text: 'name: Hopper, Grace\ncity: Arlington\njoined: 1944', headingPath: [], metadata: { row: 2, columns } },
    { type: 'table', text: 'name: Alan Turing\ncity: Wilmslow Cheshire\njoined: 1936', headingPath: [], metadata: { row: 3, columns } },
  ], 'quoted commas and a quoted line break');
  t.same(document.metadata, { delimiter: ',', rows: 3, columns });

  const tsv = await parse(csvParserPlugin, 'stock.tsv', sampleTsv, 'text/csv');
  t.same(tsv.elements.map((element) => element.text), ['sku: A-1\ndescription: Harbour lantern\nprice: 19.90', 'sku: B-2\ndescription: Rope, 20 m\nprice: 7.50']);
  t.equal(tsv.metadata?.delimiter, '\t', 'the extension says tab');
  const semicolons = await parse(csvParserPlugin, 'export.csv', '\uFEFFa;b;c\n1;2,5;3\n4;5;6\n');
  t.same(semicolons.elements.map((element) => element.text), ['a: 1\nb: 2,5\nc: 3', 'a: 4\nb: 5\nc: 6'], 'semicolons with decimal commas, BOM dropped');
  const headerless = await parse(csvParserPlugin, 'numbers.csv', '1,2,3\n4,,6\n');
  t.same(headerless.elements.map((element) => [element.text, element.metadata]), [['1 | 2 | 3', { row: 1 }], ['4 | 6', { row: 2 }]], 'numbers are not a header');
  const ragged = await parse(csvParserPlugin, 'ragged.csv', 'a,b\n1,2,3\n4\n\n\n');
  t.same(ragged.elements.map((element) => element.text), ['a: 1\nb: 2\ncolumn 3: 3', 'a: 4'], 'ragged rows, blank lines skipped');
  t.same((await parse(csvParserPlugin, 'empty.csv', '\n\n')).elements, []);
  // A quote inside an unquoted value (inches) is part of it; a row of empty values is no row.
  const inches = await parse(csvParserPlugin, 'screens.csv', 'model,size\nTV-1,55" panel\n,\nTV-2,65" panel\n');
  t.same(inches.elements.map((element) => element.text), ['model: TV-1\nsize: 55" panel', 'model: TV-2\nsize: 65" panel'], 'a quote mid-value, an empty row');
  t.match(await parseFailure(csvParserPlugin, 'bad.csv', 'a,b\n"never closed,2\n'), /^CSV line 2: Quote Not Closed/);
});

t.test('json and jsonl: records flattened to "path: value" lines', async (t) => {
  const array = await parse(jsonParserPlugin, 'places.json', sampleJson);
  t.same(array.elements.map((element) => [element.text, element.metadata]), [
    ['id: 1\nname: Lighthouse\nlocation.city: Brest\nlocation.country: France\ntags: coast, tower', { index: 0 }],
    ['id: 2\nname: Harbour\nlocation.city: Oslo\nlocation.country: Norway\nstaff[0].role: pilot\nstaff[0].count: 3', { index: 1 }],
  ]);
  const object = await parse(jsonParserPlugin, 'config.json', '{"service": {"port": 8080, "tls": null}, "name": "rs", "empty": {}, "list": []}');
  t.same(object.elements.map((element) => [element.type, element.text, element.metadata]), [
    ['paragraph', 'service.port: 8080\nservice.tls: null', { key: 'service' }],
    ['paragraph', 'name: rs', { key: 'name' }],
  ], 'one element per top-level key; empty values dropped');
  t.same((await parse(jsonParserPlugin, 'n.json', '42')).elements.map((element) => element.text), ['42']);
  const lines = await parse(jsonParserPlugin, 'log.jsonl', sampleJsonl);
  t.same(lines.elements.map((element) => [element.text, element.metadata]), [
    ['level: info\nmessage: ship docked\nship.name: Aurora\nship.berth: 4', { line: 1 }],
    ['level: warn\nmessage: fog warning\nvisibility_m: 150', { line: 3 }],
  ]);
  t.same((await parse(jsonParserPlugin, 'log.json', sampleJsonl)).elements, lines.elements, 'JSON Lines named .json');
  const spaced = await parse(jsonParserPlugin, 'spaced.jsonl', '{"a": 1}\n  \t\n{"a": 2}\n ');
  t.same(spaced.elements.map((element) => [element.text, element.metadata]), [['a: 1', { line: 1 }], ['a: 2', { line: 3 }]], 'a line of spaces is a blank line');
  t.same((await parse(jsonParserPlugin, 'blank.json', '  \n')).elements, []);
  t.match(await parseFailure(jsonParserPlugin, 'bad.json', '{"a": 1,'), /^JSON: not valid JSON \(/);
  t.match(await parseFailure(jsonParserPlugin, 'bad.jsonl', '{"a":1}\n{"b":\n'), /^JSONL line 2: not valid JSON \(/);
  t.match(await parseFailure(jsonParserPlugin, 'deep.json', `${'['.repeat(100_000)}${']'.repeat(100_000)}`), /^JSON: values nested more than 128 levels deep are not supported/, 'no stack overflow');
  t.match(await parseFailure(jsonParserPlugin, 'deep-object.json', `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`), /^JSON: values nested more than 128 levels deep are not supported \(at a\.a\.a/);
  const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  t.equal((await parse(jsonParserPlugin, 'ok.json', nested(128))).elements.length, 1, '128 levels still parse');
});
