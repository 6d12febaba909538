/**
 * Documents built in code for parser, upload and benchmark tests, so no binary of unknown origin
 * enters the repository: PDFs with pdf-lib, Word files with the docx package, zip containers
 * (including zip bombs) written byte by byte, and CSV/TSV/JSON/JSONL text.
 */
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib';
import {
  AlignmentType, Document, HeadingLevel, ImageRun, LevelFormat, Packer, Paragraph, Table, TableCell, TableRow, TextRun,
} from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { encodePng } from '../../src/parsing/png-encoder.js';

/** A gradient RGB picture as PNG bytes. */
export function buildPng(width = 32, height = 24): Buffer {
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set([(x * 255) / width, (y * 255) / height, 128], (y * width + x) * 3);
  }
  return encodePng({ width, height, channels: 3, bitDepth: 8, data });
}

export interface PdfPage {
  /** Drawn at 20 pt, so the parser should take it for a heading. */
  heading?: string;
  /** Drawn at 14 pt under the heading: a second heading level. */
  subheading?: string;
  /** Lines at 14 pt under the heading, one per line (a table of contents: "1 Pilots . . . . 4"). */
  contents?: string[];
  /** Body paragraphs at 11 pt, each on its own line(s), a blank line apart. */
  paragraphs: string[];
  /** A page number (or running foot) drawn at 10 pt in the bottom margin. */
  footer?: string;
  /** Draws the fixture PNG on this page. */
  image?: boolean;
}

export interface PdfOptions {
  pages: PdfPage[];
  /** The Info dictionary's Title. */
  title?: string;
  /** The Info dictionary's Author and Keywords. */
  author?: string;
  keywords?: string[];
}

/** A PDF with real text (standard Helvetica), one PDF page per entry of `pages`. */
export async function buildPdf(options: PdfOptions): Promise<Buffer> {
  // pdf-lib stamps the time of creation into Info by default; fixtures are the same on every run.
  const pdf = await PDFDocument.create({ updateMetadata: false });
  if (options.title !== undefined) pdf.setTitle(options.title);
  if (options.author !== undefined) pdf.setAuthor(options.author);
  // pdf-lib joins a list with spaces; the parser splits Keywords on commas and semicolons, as most writers separate them.
  if (options.keywords !== undefined) pdf.setKeywords([options.keywords.join(', ')]);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  const picture = options.pages.some((page) => page.image) ? await pdf.embedPng(buildPng()) : undefined;
  for (const content of options.pages) {
    const page = pdf.addPage([612, 792]);
    let y = 720;
    if (content.heading) {
      page.drawText(content.heading, { x: 72, y, size: 20, font: bold });
      y -= 34;
    }
    if (content.subheading) {
      page.drawText(content.subheading, { x: 72, y, size: 14, font: bold });
      y -= 24;
    }
    for (const line of content.contents ?? []) {
      page.drawText(line, { x: 72, y, size: 14, font: bold });
      y -= 18;
    }
    if (content.footer) page.drawText(content.footer, { x: 300, y: 30, size: 10, font });
    for (const paragraph of content.paragraphs) {
      for (const line of wrap(paragraph, 80)) {
        page.drawText(line, { x: 72, y, size: 11, font });
        y -= 14;
      }
      y -= 10;
    }
    if (picture && content.image) page.drawImage(picture, { x: 72, y: Math.max(y - 120, 40), width: 160, height: 120 });
  }
  return Buffer.from(await pdf.save());
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line.length > 0 && line.length + word.length + 1 > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

export interface DocxOptions {
  /** docProps/core.xml title. */
  title?: string;
  /** docProps/core.xml creator and keywords (one string, as Word writes them). */
  creator?: string;
  keywords?: string;
  /** Adds a picture with this alt text after the table. */
  imageAlt?: string;
}

/**
 * A Word document: "Employee Handbook" (heading 1) with an intro paragraph, "Benefits" (heading 2)
 * with a bulleted and a numbered list, "Costs" (heading 2) with a 3×2 table, and optionally a
 * picture; then "Appendix" (heading 1) with one paragraph.
 */
export async function buildDocx(options: DocxOptions = {}): Promise<Buffer> {
  const document = new Document({
    ...(options.title !== undefined ? { title: options.title } : {}),
    ...(options.creator !== undefined ? { creator: options.creator } : {}),
    ...(options.keywords !== undefined ? { keywords: options.keywords } : {}),
    numbering: {
      config: [{ reference: 'steps', levels: [{ level: 0, format: LevelFormat.DECIMAL, text: '%1.', alignment: AlignmentType.START }] }],
    },
    sections: [{
      children: [
        new Paragraph({ text: 'Employee Handbook', heading: HeadingLevel.HEADING_1 }),
        new Paragraph({ children: [new TextRun('Welcome to the '), new TextRun({ text: 'lighthouse', bold: true }), new TextRun(' company handbook.')] }),
        new Paragraph({ text: 'Benefits', heading: HeadingLevel.HEADING_2 }),
        new Paragraph({ text: 'Dental plan', bullet: { level: 0 } }),
        new Paragraph({ text: 'Vision plan', bullet: { level: 0 } }),
        new Paragraph({ text: 'Enrol online', numbering: { reference: 'steps', level: 0 } }),
        new Paragraph({ text: 'Wait for the card', numbering: { reference: 'steps', level: 0 } }),
        new Paragraph({ text: 'Costs', heading: HeadingLevel.HEADING_2 }),
        new Table({
          rows: [['Plan', 'Monthly cost'], ['Dental', '12 EUR'], ['Vision', '7 EUR']].map((cells) => new TableRow({
            children: cells.map((cell) => new TableCell({ children: [new Paragraph(cell)] })),
          })),
        }),
        ...(options.imageAlt !== undefined
          ? [new Paragraph({
            children: [new ImageRun({
              type: 'png', data: buildPng(), transformation: { width: 64, height: 48 },
              altText: { name: 'picture', title: options.imageAlt, description: options.imageAlt },
            })],
          })]
          : []),
        new Paragraph({ text: 'Appendix', heading: HeadingLevel.HEADING_1 }),
        new Paragraph('Contact the harbour office for questions.'),
      ],
    }],
  });
  return Packer.toBuffer(document);
}

export interface ZipEntry {
  name: string;
  data: Buffer;
  /** Size written in the headers instead of the real one (a lying archive). */
  declaredSize?: number;
  /** Written as it is, not deflated (as OpenDocument files store their `mimetype`). */
  stored?: boolean;
}

interface WrittenEntry {
  name: Buffer;
  crc: number;
  compressed: Buffer;
  declaredSize: number;
  /** 0 stored, 8 deflated. */
  method: number;
  offset: number;
}

function localHeader(entry: WrittenEntry): Buffer {
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt16LE(entry.method, 8);
  header.writeUInt32LE(entry.crc, 14);
  header.writeUInt32LE(entry.compressed.length, 18);
  header.writeUInt32LE(entry.declaredSize, 22);
  header.writeUInt16LE(entry.name.length, 26);
  return Buffer.concat([header, entry.name]);
}

function centralHeader(entry: WrittenEntry): Buffer {
  const header = Buffer.alloc(46);
  header.writeUInt32LE(0x02014b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt16LE(20, 6);
  header.writeUInt16LE(entry.method, 10);
  header.writeUInt32LE(entry.crc, 16);
  header.writeUInt32LE(entry.compressed.length, 20);
  header.writeUInt32LE(entry.declaredSize, 24);
  header.writeUInt16LE(entry.name.length, 28);
  header.writeUInt32LE(entry.offset, 42);
  return Buffer.concat([header, entry.name]);
}

function zipArchive(entries: Array<{ name: string; crc: number; compressed: Buffer; declaredSize: number; method: number }>): Buffer {
  const parts: Buffer[] = [];
  const written: WrittenEntry[] = [];
  let offset = 0;
  for (const entry of entries) {
    const item = { ...entry, name: Buffer.from(entry.name), offset };
    const local = localHeader(item);
    parts.push(local, entry.compressed);
    offset += local.length + entry.compressed.length;
    written.push(item);
  }
  const central = Buffer.concat(written.map(centralHeader));
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(written.length, 8);
  end.writeUInt16LE(written.length, 10);
  end.writeUInt32LE(central.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, central, end]);
}

/** A zip archive of deflated entries, written byte by byte. */
export function buildZip(entries: ZipEntry[]): Buffer {
  return zipArchive(entries.map((entry) => ({
    name: entry.name, crc: crc32(entry.data), compressed: entry.stored ? entry.data : deflateRawSync(entry.data),
    declaredSize: entry.declaredSize ?? entry.data.length, method: entry.stored ? 0 : 8,
  })));
}

const contentTypesXml = '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
  + '<Default Extension="xml" ContentType="application/xml"/>'
  + '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';

export interface ZipBombOptions {
  /** Bytes word/document.xml inflates to (default 64 MiB of spaces: ~64 KB deflated, ~1000×). */
  inflatedBytes?: number;
  /** Write a small size in the headers, so only inflating reveals the bomb. */
  lying?: boolean;
}

/** A DOCX-shaped zip whose word/document.xml is a deflate bomb. Streams the deflate, never holding the inflated bytes. */
export async function buildZipBomb(options: ZipBombOptions = {}): Promise<Buffer> {
  const inflatedBytes = options.inflatedBytes ?? 64 * 1024 * 1024;
  const block = Buffer.alloc(1024 * 1024, ' ');
  const deflate = createDeflateRaw({ level: 9 });
  const compressed: Buffer[] = [];
  deflate.on('data', (chunk: Buffer) => compressed.push(chunk));
  const finished = new Promise((resolve, reject) => {
    deflate.once('end', resolve);
    deflate.once('error', reject);
  });
  let crc = 0;
  for (let written = 0; written < inflatedBytes; written += block.length) {
    const piece = block.subarray(0, Math.min(block.length, inflatedBytes - written));
    crc = crc32(piece, crc);
    if (!deflate.write(piece)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  deflate.end();
  await finished;
  const contentTypes = Buffer.from(contentTypesXml);
  return zipArchive([
    { name: '[Content_Types].xml', crc: crc32(contentTypes), compressed: deflateRawSync(contentTypes), declaredSize: contentTypes.length, method: 8 },
    { name: 'word/document.xml', crc, compressed: Buffer.concat(compressed), declaredSize: options.lying ? 4096 : inflatedBytes, method: 8 },
  ]);
}

export const sampleCsv = [
  'name,city,joined',
  'Ada Lovelace,London,1843',
  '"Hopper, Grace",Arlington,1944',
  'Alan Turing,"Wilmslow',
  'Cheshire",1936',
].join('\r\n');

export const sampleTsv = 'sku\tdescription\tprice\nA-1\tHarbour lantern\t19.90\nB-2\tRope, 20 m\t7.50\n';

export const sampleJson = JSON.stringify([
  { id: 1, name: 'Lighthouse', location: { city: 'Brest', country: 'France' }, tags: ['coast', 'tower'] },
  { id: 2, name: 'Harbour', location: { city: 'Oslo', country: 'Norway' }, staff: [{ role: 'pilot', count: 3 }] },
], null, 2);

export const sampleJsonl = [
  '{"level":"info","message":"ship docked","ship":{"name":"Aurora","berth":4}}',
  '',
  '{"level":"warn","message":"fog warning","visibility_m":150}',
].join('\n');

/** An HTML page with a picture in its Diagrams section: a multimodal collection lists it as an image element. */
export const harbourAtlasHtml = () => `<!doctype html><html><head><title>Harbour atlas</title></head><body>
<h1>Harbour atlas</h1>
<h2>Diagrams</h2><p>The quay layout shows where cranes unload the container ships.</p>
<img alt="quay layout" src="data:image/png;base64,${buildPng(32, 24).toString('base64')}">
</body></html>`;
