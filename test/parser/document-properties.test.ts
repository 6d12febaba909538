/**
 * Document properties a file declares (PDF Info dictionary, HTML <meta>, DOCX docProps/core.xml)
 * come back as `ParsedDocument.metadata`: author, description, keywords (a list), created_at and
 * modified_at (ISO 8601), with blank values and unreadable dates left out.
 */
import t from 'tap';
import { Document, Packer, Paragraph } from 'docx';
import { PDFDict, PDFDocument, PDFHexString, PDFName, StandardFonts } from 'pdf-lib';
import { docxParserPlugin } from '../../plugins/parser/docx/index.js';
import { htmlParserPlugin } from '../../plugins/parser/html/index.js';
import { markdownParserPlugin } from '../../plugins/parser/markdown/index.js';
import { pdfParserPlugin } from '../../plugins/parser/pdf/index.js';
import type { ParsedDocument, PluginDefinition } from '../../src/plugins.js';
import { buildZip } from '../support/document-fixtures.js';

async function parse(plugin: PluginDefinition<'parser'>, filename: string, content: string | Buffer): Promise<ParsedDocument> {
  const parser = plugin.create({}, {});
  const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return parser.parse({ filename, contentType: parser.contentTypes[0]!, data });
}

/**
 * A one-page PDF whose Info dictionary holds exactly `info`, written raw: pdf-lib's setters would
 * join keywords with spaces and format dates themselves, and `create` would add its own dates.
 */
async function pdfWithInfo(info: Record<string, string>): Promise<Buffer> {
  const pdf = await PDFDocument.create({ updateMetadata: false });
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  pdf.addPage([612, 792]).drawText('Pilots guide ships through the channel.', { x: 72, y: 700, size: 11, font });
  pdf.setProducer('test');
  const dictionary = pdf.context.lookup(pdf.context.trailerInfo.Info, PDFDict);
  for (const [key, value] of Object.entries(info)) dictionary.set(PDFName.of(key), PDFHexString.fromText(value));
  return Buffer.from(await pdf.save());
}

/** The smallest Word document mammoth reads, with `coreProperties` as the inside of docProps/core.xml (none when undefined). */
function docxWithCore(coreProperties: string | undefined): Buffer {
  const file = (name: string, text: string) => ({ name, data: Buffer.from(text) });
  const core = coreProperties === undefined ? [] : [file('docProps/core.xml', '<?xml version="1.0" encoding="UTF-8"?>'
    + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"'
    + ' xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
    + `${coreProperties}</cp:coreProperties>`)];
  return buildZip([
    file('[Content_Types].xml', '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
      + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
      + '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'),
    file('_rels/.rels', '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
      + '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'),
    file('word/document.xml', '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
      + '<w:body><w:p><w:r><w:t>Pilots guide ships through the channel.</w:t></w:r></w:p></w:body></w:document>'),
    ...core,
  ]);
}

t.test('pdf: Info Author, Subject, Keywords, CreationDate and ModDate beside the page count', async (t) => {
  const document = await parse(pdfParserPlugin, 'manual.pdf', await pdfWithInfo({
    Title: 'Harbour Manual',
    Author: '  Ada\n  Lovelace ',
    Subject: 'Rules of the   harbour',
    Keywords: 'harbour, pilots; tides,, ;pilots , berths',
    CreationDate: "D:20240131120000+01'00'",
    ModDate: '20240202083000Z',
  }));
  t.equal(document.title, 'Harbour Manual', 'the title stays the Info title');
  t.same(document.metadata, {
    pages: 1,
    author: 'Ada Lovelace',
    description: 'Rules of the harbour',
    keywords: ['harbour', 'pilots', 'tides', 'berths'],
    created_at: '2024-01-31T11:00:00.000Z',
    modified_at: '2024-02-02T08:30:00.000Z',
  }, 'whitespace collapsed, keywords split on commas and semicolons without blanks or repeats, dates in UTC (a ModDate without "D:" too)');
});

t.test('pdf: blank properties give no key and unreadable dates are dropped', async (t) => {
  const document = await parse(pdfParserPlugin, 'notes.pdf', await pdfWithInfo({
    Author: '   ', Keywords: ' ; , ', Subject: 'Tide tables', CreationDate: 'last Tuesday', ModDate: 'D:soon',
  }));
  t.same(document.metadata, { pages: 1, description: 'Tide tables' });
});

t.test('html: <meta> author, description and keywords', async (t) => {
  const page = `<!doctype html><html><head><title>Harbour</title>
    <meta charset="utf-8"><meta name="Author" content=" Ada
      Lovelace "><meta name="description" content="  "><meta name="description" content="Rules of the harbour">
    <meta name="keywords" content="harbour, pilots"><meta name="keywords" content="tides; pilots">
    <meta property="og:description" content="Not a name">
    </head><body><h1>Harbour</h1><p>Pilots guide ships.</p></body></html>`;
  const document = await parse(htmlParserPlugin, 'page.html', page);
  t.equal(document.title, 'Harbour');
  t.same(document.metadata, { author: 'Ada Lovelace', description: 'Rules of the harbour', keywords: ['harbour', 'pilots', 'tides'] },
    'names read case-insensitively; a blank tag does not hide a later one; keywords of every tag, repeats dropped');

  const sparse = await parse(htmlParserPlugin, 'sparse.html', '<head><meta name="author" content="Ada"><meta name="keywords" content=" , "></head><p>Text.</p>');
  t.same(sparse.metadata, { author: 'Ada' }, 'absent description and blank keywords give no key');
  t.equal((await parse(htmlParserPlugin, 'bare.html', '<p>Text.</p>')).metadata, undefined, 'a page without meta tags has no metadata');
});

t.test('markdown: an inline <meta name="author"> block says nothing about the file', async (t) => {
  const block = '<meta name="author" content="Mallory">';
  t.same((await parse(htmlParserPlugin, 'page.html', block)).metadata, { author: 'Mallory' }, 'the same tag names a web page\'s author');
  const document = await parse(markdownParserPlugin, 'notes.md', `# Notes\n\n${block}\n\nPilots guide ships.\n`);
  t.notOk(document.metadata && 'author' in document.metadata, 'but not a Markdown file\'s');
});

t.test('docx: core.xml creator, description (with character references), keywords and dates', async (t) => {
  const document = await parse(docxParserPlugin, 'rules.docx', docxWithCore(
    '<dc:title>Harbour Rules</dc:title><dc:creator> Ada &amp;\n Co </dc:creator><dc:subject>Ignored beside a description</dc:subject>'
    // Character references, decimal and hexadecimal (x or X); one past U+10FFFF names no character and stays as written.
    + '<dc:description>Rules of the harbour &#8211; caf&#xE9; &#X41; &#1114112;</dc:description><cp:keywords>harbour; pilots, tides, harbour</cp:keywords>'
    + '<dcterms:created xsi:type="dcterms:W3CDTF">2024-01-31T12:00:00+01:00</dcterms:created>'
    + '<dcterms:modified xsi:type="dcterms:W3CDTF">2024-02-02T08:30:00Z</dcterms:modified>',
  ));
  t.equal(document.title, 'Harbour Rules', 'the title stays dc:title');
  t.same(document.metadata, {
    author: 'Ada & Co',
    description: 'Rules of the harbour \u2013 café A &#1114112;',
    keywords: ['harbour', 'pilots', 'tides'],
    created_at: '2024-01-31T11:00:00.000Z',
    modified_at: '2024-02-02T08:30:00.000Z',
  });
});

t.test('docx: dc:subject stands in for a missing description; blank values and bad dates give no key', async (t) => {
  const document = await parse(docxParserPlugin, 'notes.docx', docxWithCore(
    '<dc:creator>  </dc:creator><dc:description/><dc:subject>Tide tables</dc:subject><cp:keywords></cp:keywords>'
    + '<dcterms:created xsi:type="dcterms:W3CDTF">last Tuesday</dcterms:created><dcterms:modified xsi:type="dcterms:W3CDTF">2024-13-45T99:00:00Z</dcterms:modified>',
  ));
  t.same(document.metadata, { description: 'Tide tables' });
  t.equal((await parse(docxParserPlugin, 'bare.docx', docxWithCore(undefined))).metadata, undefined, 'no core.xml, no metadata');
});

t.test('docx: the properties of a document written by the docx package', async (t) => {
  const written = new Document({
    creator: 'Ada Lovelace', description: 'Rules of the harbour', keywords: 'harbour, pilots',
    sections: [{ children: [new Paragraph('Pilots guide ships through the channel.')] }],
  });
  const document = await parse(docxParserPlugin, 'written.docx', await Packer.toBuffer(written));
  t.match(document.metadata, {
    author: 'Ada Lovelace', description: 'Rules of the harbour', keywords: ['harbour', 'pilots'],
    created_at: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, modified_at: /^\d{4}-\d{2}-\d{2}T/,
  });
});
