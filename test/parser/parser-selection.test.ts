import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { text as streamText } from 'node:stream/consumers';
import t from 'tap';
import writeXlsxFile from 'write-excel-file/node';
import { builtInParsers } from '../../plugins/parser/index.js';
import { AppError } from '../../src/errors.js';
import { detectParser, inspectUpload, supportedTypesDescription, UPLOAD_SAMPLE_BYTES } from '../../src/ingestion/parser-selection.js';
import { buildDocx, buildPdf, buildPng, buildZip, buildZipBomb, sampleCsv, sampleJson, sampleJsonl, sampleTsv } from '../support/document-fixtures.js';
import { buildOdt } from '../support/open-document-fixture.js';
import { buildPptx } from '../support/pptx-fixture.js';

const parsers = builtInParsers.map((plugin) => plugin.create({}, {}));
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const PPTX_TYPE = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';
const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const ODT_TYPE = 'application/vnd.oasis.opendocument.text';

async function choose(filename: string, content: string | Buffer, contentType = 'application/octet-stream', complete = true) {
  const data = typeof content === 'string' ? Buffer.from(content) : content;
  const choice = await detectParser(parsers, { filename, contentType, data, complete });
  return [choice.parser.name, choice.contentType];
}

async function refusal(filename: string, content: string | Buffer, contentType = 'application/octet-stream'): Promise<[number, string]> {
  try {
    await choose(filename, content, contentType);
  } catch (error) {
    if (error instanceof AppError) return [error.status, error.message];
    throw error;
  }
  return [0, 'accepted'];
}

t.test('binary formats are recognised by their magic bytes, whatever the name says', async (t) => {
  const pdf = await buildPdf({ pages: [{ paragraphs: ['text'] }] });
  const docx = await buildDocx();
  t.same(await choose('manual.pdf', pdf), ['pdf', 'application/pdf']);
  t.same(await choose('notes.txt', pdf, 'text/plain'), ['pdf', 'application/pdf'], 'a PDF named .txt is read as PDF');
  t.same(await choose('scan', pdf), ['pdf', 'application/pdf'], 'no extension');
  t.same(await choose('report.docx', docx), ['docx', DOCX_TYPE]);
  t.same(await choose('report.zip', docx, 'application/zip'), ['docx', DOCX_TYPE], 'a DOCX named .zip');
  t.same(await choose('report.txt', docx.subarray(0, 4096), 'text/plain', false), ['docx', DOCX_TYPE], 'judged by the first 4 KB: word/document.xml is there');
  t.same(await choose('cut.docx', docx.subarray(0, 300)), ['docx', DOCX_TYPE], 'a zip too short to show its entries keeps the name it claims, so the parser explains');
  t.same(await choose('bomb.docx', await buildZipBomb()), ['docx', DOCX_TYPE], 'a bomb reaches the parser, which refuses it');
  const pptx = buildPptx({ slides: [{ shapes: [{ kind: 'title', lines: [{ text: 'Agenda' }] }] }] });
  t.same(await choose('deck.pptx', pptx), ['pptx', PPTX_TYPE]);
  t.same(await choose('deck.zip', pptx, 'application/zip'), ['pptx', PPTX_TYPE], 'a PPTX named .zip');
  t.same(await choose('deck.docx', pptx), ['pptx', PPTX_TYPE], 'a PPTX named .docx is read as what it is');
  const xlsx = await writeXlsxFile([[{ value: 'Berth' }], [{ value: 4 }]]).toBuffer();
  t.same(await choose('berths.xlsx', xlsx), ['xlsx', XLSX_TYPE]);
  t.same(await choose('berths.bin', xlsx, 'application/octet-stream'), ['xlsx', XLSX_TYPE], 'a workbook by its content');
  t.same(await choose('cut.pptx', pptx.subarray(0, 20)), ['pptx', PPTX_TYPE], 'a zip-based format cut before its entries keeps its name, so the parser explains');
  const odt = buildOdt({ body: '<text:p>Dear captain,</text:p>' });
  t.same(await choose('letter.odt', odt), ['odt', ODT_TYPE]);
  t.same(await choose('letter.zip', odt, 'application/zip'), ['odt', ODT_TYPE], 'an OpenDocument text by its mimetype entry');
  t.same(await choose('cut.odt', odt.subarray(0, 20)), ['odt', ODT_TYPE], 'cut before its mimetype shows, it keeps its name');
});

t.test('prose that matches a one-byte signature stays text when its name says text', async (t) => {
  // file-type calls any data with "G" at offsets 0 and 188 an MPEG transport stream.
  const prose = `Gardens ${'grow slowly in the shade of old walls. '.repeat(5).slice(0, 180)}Gravel paths wind between the beds and the pond.`;
  t.equal(prose[188], 'G');
  t.same(await choose('garden.txt', prose, 'text/plain'), ['text', 'text/plain']);
  t.same(await choose('garden.md', prose), ['markdown', 'text/markdown']);
  t.match(await refusal('garden.bin', prose), [415, /MTS data/], 'no text name: the signature still decides');
});

t.test('unsupported binary data is refused with 415 naming the supported types', async (t) => {
  const [status, detail] = await refusal('photo.txt', buildPng(), 'text/plain');
  t.equal(status, 415);
  t.match(detail, /^Unsupported file type: "photo\.txt" is PNG data \(image\/png\) by its content; supported: \.txt, /);
  for (const listed of ['.md', '.html', '.pdf', '.docx', '.pptx', '.xlsx', '.csv', '.tsv', '.json', '.jsonl', 'application/pdf', 'text/csv', 'application/json']) t.ok(detail.includes(listed), `lists ${listed}`);
  t.match((await refusal('setup.exe', Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03, 0x00, 0x00, 0x00])))[1], /"setup\.exe" is EXE data/);
  t.match((await refusal('archive.docx', buildZip([{ name: 'readme.txt', data: Buffer.from('hello') }])))[1], /"archive\.docx" is ZIP data \(application\/zip\)/,
    'a whole zip without word/document.xml is not a DOCX');
  t.match(await refusal('blob.txt', randomBytes(4096), 'text/plain'), [415, /"blob\.txt" holds binary data of no supported format/], 'random bytes named .txt');
  t.match(await refusal('empty.md', ''), [400, 'File "empty.md" is empty: there is nothing to index']);
  t.equal(supportedTypesDescription(parsers).split(' (')[0], '.txt, .text, .log, .md, .markdown, .mdx, .html, .htm, .xhtml, .pdf, .docx, .odt, .pptx, .odp, .xlsx, .ods, .csv, .tsv, .tab, .json, .jsonl, .ndjson, .eml');
});

t.test('text: the name picks among text formats; the content decides when the name does not', async (t) => {
  t.same(await choose('data.json', sampleJson), ['json', 'application/json']);
  t.same(await choose('message', 'From: ada@harbour.example\r\nSubject: Tides\r\n\r\nHigh water at six.', 'message/rfc822'), ['email', 'message/rfc822'], 'an email by its declared type');
  t.same(await choose('notes.txt', sampleJson, 'text/plain'), ['text', 'text/plain'], 'JSON text named .txt stays text: weak signatures never override a name');
  t.same(await choose('page.txt', '<!DOCTYPE html><html><body><p>x</p></body></html>'), ['html', 'text/html'], 'HTML markup overrides a text name');
  t.same(await choose('readme.md', '\uFEFF<html lang="en"><p>x</p></html>'), ['html', 'text/html']);
  t.same(await choose('page.xhtml', '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>x</body></html>'), ['html', 'application/xhtml+xml'], 'XML (file-type) named .xhtml');
  t.same(await choose('log.jsonl', sampleJsonl), ['json', 'application/x-ndjson'], 'a parser of several formats records the one the extension names');
  t.same(await choose('stock.tab', sampleTsv), ['csv', 'text/tab-separated-values']);
  t.same(await choose('fake.pdf', 'This is plain text saved with a .pdf name.'), ['text', 'text/plain'], 'a binary format name on text: content decides');
  t.same(await choose('export', 'a,b\n1,2\n', 'text/csv'), ['csv', 'text/csv'], 'declared type when the name has no extension');
  t.same(await choose('binary.txt', Buffer.from('header\u0000\u0001\u0002 binary tail'), 'text/plain'), ['text', 'text/plain'], 'stray control bytes in UTF-8 text');
  t.same(await choose('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])), ['text', 'text/plain'], 'Latin-1');
  t.same(await choose('win.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hello\r\n', 'utf16le')])), ['text', 'text/plain'], 'UTF-16 with BOM');
  t.same(await choose('calendar.txt', 'BEGIN:VCALENDAR\nEND:VCALENDAR\n'), ['text', 'text/plain'], 'text formats file-type knows are still text');

  t.same(await choose('upload', sampleJson), ['json', 'application/json'], 'sniffed JSON');
  t.same(await choose('upload', '{"a": 1,\n "b": [1, 2,', 'application/octet-stream', false), ['json', 'application/json'], 'the head of a large JSON file');
  t.same(await choose('upload.bin', sampleJsonl), ['json', 'application/x-ndjson'], 'sniffed JSON Lines');
  t.same(await choose('upload', sampleCsv), ['csv', 'text/csv'], 'sniffed CSV');
  t.same(await choose('upload', sampleTsv), ['csv', 'text/tab-separated-values'], 'sniffed TSV');
  t.same(await choose('upload', '# Title\n\nSome *markdown* text.\n'), ['markdown', 'text/markdown'], 'sniffed Markdown');
  t.same(await choose('upload', 'Dear reader, this is a letter.\nYours, me.\n'), ['text', 'text/plain'], 'prose with a comma a line is not CSV');
  const twoColumns = 'name,depth\nbay,4\ncove,7\nreef,2\nsound,9\n';
  t.same(await choose('upload', twoColumns), ['csv', 'text/csv'], 'one comma a line on five lines is a two-column CSV');
  t.same(await choose('upload', twoColumns.split('\n').slice(0, 4).join('\n')), ['text', 'text/plain'], 'but not on four');
  t.same(await choose('upload', 'Run this:\n\n```\nmake all\n```\n'), ['markdown', 'text/markdown'], 'sniffed Markdown: a fence alone');
  t.same(await choose('upload', 'See [the guide](https://example.com/guide) first.\n'), ['markdown', 'text/markdown'], 'sniffed Markdown: a link alone');
  t.same(await choose('upload', '<html><body>hi</body></html>'), ['html', 'text/html'], 'sniffed HTML');
});

t.test('inspectUpload: judges the first 64 KB and hands back the whole file, as a stream or, when it fit, as bytes', async (t) => {
  const body = `${'harbour log line\n'.repeat(12_000)}the end`;
  t.ok(body.length > 3 * UPLOAD_SAMPLE_BYTES);
  const chunked = Readable.from(Array.from({ length: Math.ceil(body.length / 1000) }, (_, index) => Buffer.from(body.slice(index * 1000, (index + 1) * 1000))));
  const inspected = await inspectUpload(parsers, { filename: 'log.txt', contentType: 'text/plain', stream: chunked });
  t.equal(inspected.choice.parser.name, 'text');
  t.notOk(Buffer.isBuffer(inspected.content), 'a file longer than the sample stays a stream');
  t.equal(await streamText(inspected.content as Readable), body, 'every byte, in order');

  const small = await inspectUpload(parsers, { filename: 'n.md', contentType: undefined, stream: Readable.from([Buffer.from('# Hi')]) });
  t.equal(small.choice.parser.name, 'markdown');
  t.same(small.content, Buffer.from('# Hi'), 'a file within the sample is handed back as its bytes');

  const refused = Readable.from([buildPng(), randomBytes(200_000)]);
  const error = await inspectUpload(parsers, { filename: 'p.png', contentType: 'image/png', stream: refused }).catch((caught: unknown) => caught);
  t.match(error, { status: 415, message: /"p\.png" is PNG data/ });
  await new Promise((resolve) => setImmediate(resolve));
  t.ok(refused.readableEnded, 'a refused upload is drained, so a multipart body can go on');

  const failing = new Readable({ read() { this.destroy(new Error('client went away')); } });
  await t.rejects(inspectUpload(parsers, { filename: 'x.txt', contentType: 'text/plain', stream: failing }), /client went away/);
});
