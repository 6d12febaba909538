/**
 * The `pptx` parser: PowerPoint presentations. Each slide, in the deck's order, gives its title (a
 * heading), its text boxes (a paragraph each, or a list where a box holds several bulleted lines),
 * its tables (a first row marked as the header row is the table's header), its pictures (`image`
 * elements with their description as text, captioned in multimodal collections) and then its
 * speaker notes (metadata `speaker_notes: true`), every element with `page` = the slide's number, so a
 * result can say "slide 7". Date, footer and slide-number placeholders are left out: they repeat
 * on every slide.
 *
 * Written here rather than taken from a library: officeparser 8, the one package that gives a
 * presentation's structure, needs Node.js 22 and brings tesseract.js and a second pdf.js; its
 * earlier versions and the other packages give the text alone, without slides, titles or tables.
 * The slide XML is read with htmlparser2 and written as the HTML that Word files and web pages go
 * through (src/parsing/html-elements.ts), so lists, tables and headings come out alike.
 *
 * The zip container is checked before anything is read (src/parsing/zip-inspection.ts).
 */
import path from 'node:path/posix';
import { DomUtils, parseDocument } from 'htmlparser2';
import type { DocumentElement, ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { archivePictureResolver } from '../../../src/parsing/archive-pictures.js';
import { DocumentParseError } from '../../../src/parsing/document-parse-error.js';
import { collapseWhitespace } from '../../../src/parsing/document-properties.js';
import { escapeHtml } from '../../../src/parsing/html-escape.js';
import { CORE_PROPERTIES_ENTRY, coreProperties, coreProperty } from '../../../src/parsing/office-core-properties.js';
import { PORTABLE_IMAGE_TYPES } from '../../../src/parsing/portable-image-types.js';
import { slideElements } from '../../../src/parsing/slide-elements.js';
import { inspectZipArchive, officeDocumentLimits } from '../../../src/parsing/zip-inspection.js';

const PRESENTATION_ENTRY = 'ppt/presentation.xml';
const PRESENTATION_RELATIONSHIPS_ENTRY = 'ppt/_rels/presentation.xml.rels';
const keptEntry = /^(?:ppt\/(?:slides|notesSlides)\/(?:_rels\/)?[^/]+\.xml(?:\.rels)?|ppt\/presentation\.xml|ppt\/_rels\/presentation\.xml\.rels|docProps\/core\.xml)$/;
const MEDIA_SOURCE_PREFIX = 'pptx-media:';
/** Pictures by their file's extension, as PowerPoint names them in ppt/media/. */
const pictureTypes: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp',
  emf: 'image/x-emf', wmf: 'image/x-wmf', tif: 'image/tiff', tiff: 'image/tiff', svg: 'image/svg+xml',
};

function pictureType(partName: string): string {
  return pictureTypes[path.extname(partName).slice(1).toLowerCase()] ?? 'application/octet-stream';
}

/** Slide parts, and the pictures whose bytes an element can carry (other media, videos included, stay unread). */
function isKeptEntry(name: string): boolean {
  return keptEntry.test(name) || (name.startsWith('ppt/media/') && PORTABLE_IMAGE_TYPES.has(pictureType(name)));
}

type XmlNode = ReturnType<typeof parseDocument>;
type XmlElement = ReturnType<typeof DomUtils.getElementsByTagName>[number];

const titlePlaceholders = new Set(['title', 'ctrTitle']);
/** Placeholders PowerPoint fills with the same thing on every slide. */
const repeatedPlaceholders = new Set(['dt', 'ftr', 'hdr', 'sldNum', 'sldImg']);

function childrenNamed(element: XmlElement, name: string): XmlElement[] {
  return DomUtils.getElementsByTagName(name, element.children, false);
}

function descendantsNamed(node: XmlNode | XmlElement, name: string): XmlElement[] {
  return DomUtils.getElementsByTagName(name, node.children, true);
}

/** A paragraph's text: its runs and fields, a line break as a space. */
function paragraphText(paragraph: XmlElement): string {
  const pieces = DomUtils.findAll((element) => element.name === 'a:t' || element.name === 'a:br', paragraph.children)
    .map((element) => (element.name === 'a:br' ? ' ' : DomUtils.textContent(element)));
  return collapseWhitespace(pieces.join(''));
}

interface TextLine {
  text: string;
  level: number;
}

/** DrawingML's bullet levels run from 0 to 8. */
const DEEPEST_LEVEL = 8;

/** A paragraph's bullet level, within DrawingML's range: a file claiming level 1e9 would have the list opened a billion times. */
function bulletLevel(paragraph: XmlElement): number {
  const level = Math.trunc(Number(childrenNamed(paragraph, 'a:pPr')[0]?.attribs.lvl ?? 0));
  return Number.isFinite(level) ? Math.min(Math.max(level, 0), DEEPEST_LEVEL) : 0;
}

function textLines(textBody: XmlElement): TextLine[] {
  return childrenNamed(textBody, 'a:p')
    .map((paragraph) => ({ text: paragraphText(paragraph), level: bulletLevel(paragraph) }))
    .filter((line) => line.text.length > 0);
}

function placeholderType(shape: XmlElement): string | undefined {
  const placeholder = descendantsNamed(shape, 'p:ph')[0];
  if (!placeholder) return undefined;
  return placeholder.attribs.type ?? 'body';
}

/** A box of several lines is a list when they are bulleted: a body placeholder, or lines at more than one level. */
function shapeHtml(lines: TextLine[], isBodyPlaceholder: boolean): string {
  if (lines.length > 1 && (isBodyPlaceholder || lines.some((line) => line.level > 0))) {
    let html = '';
    let depth = 0;
    for (const line of lines) {
      const level = line.level + 1;
      for (; depth < level; depth++) html += '<ul>';
      for (; depth > level; depth--) html += '</ul>';
      html += `<li>${escapeHtml(line.text)}</li>`;
    }
    return html + '</ul>'.repeat(depth);
  }
  return lines.map((line) => `<p>${escapeHtml(line.text)}</p>`).join('');
}

function tableHtml(table: XmlElement): string {
  const firstRowIsHeader = childrenNamed(table, 'a:tblPr')[0]?.attribs.firstRow === '1';
  const rows = childrenNamed(table, 'a:tr').map((row, index) => {
    const cell = index === 0 && firstRowIsHeader ? 'th' : 'td';
    const cells = childrenNamed(row, 'a:tc').map((tableCell) => {
      const text = descendantsNamed(tableCell, 'a:p').map(paragraphText).filter((line) => line.length > 0).join(' ');
      return `<${cell}>${escapeHtml(text)}</${cell}>`;
    });
    return `<tr>${cells.join('')}</tr>`;
  });
  return `<table>${rows.join('')}</table>`;
}

interface SlideContent {
  title: string | undefined;
  html: string;
}

/**
 * A slide or notes part, parsed. Content a newer PowerPoint writes twice (mc:AlternateContent: an
 * equation, a 3D model or a newer shape, and its fallback for older readers) is kept once, as the
 * first choice: read whole, its text came out twice.
 */
function parseSlidePart(xml: string): XmlNode {
  const document = parseDocument(xml, { xmlMode: true });
  for (const fallback of DomUtils.findAll((element) => element.name === 'mc:Fallback', document.children)) DomUtils.removeElement(fallback);
  return document;
}

/** A picture as an <img> whose src names its part in the archive; its alt text is the description PowerPoint keeps for it. */
function pictureHtml(picture: XmlElement, relationships: Map<string, { type: string; target: string }>): string {
  const embedded = descendantsNamed(picture, 'a:blip')[0]?.attribs['r:embed'];
  const target = embedded === undefined ? undefined : relationships.get(embedded)?.target;
  if (target === undefined) return '';
  const properties = descendantsNamed(picture, 'p:cNvPr')[0]?.attribs;
  const description = properties?.descr ?? properties?.title ?? '';
  return `<img src="${escapeHtml(MEDIA_SOURCE_PREFIX + target)}" alt="${escapeHtml(description)}">`;
}

/** A slide's title and the HTML of the rest of its text, shapes, tables and pictures in the order the slide lists them. */
function slideContent(slideXml: string, relationships: Map<string, { type: string; target: string }>): SlideContent {
  const document = parseSlidePart(slideXml);
  let title: string | undefined;
  let html = '';
  const shapeNames = new Set(['p:sp', 'a:tbl', 'p:pic']);
  for (const shape of DomUtils.findAll((element) => shapeNames.has(element.name), document.children)) {
    if (shape.name === 'a:tbl') {
      html += tableHtml(shape);
      continue;
    }
    if (shape.name === 'p:pic') {
      html += pictureHtml(shape, relationships);
      continue;
    }
    const type = placeholderType(shape);
    if (type !== undefined && repeatedPlaceholders.has(type)) continue;
    const textBody = childrenNamed(shape, 'p:txBody')[0];
    const lines = textBody ? textLines(textBody) : [];
    if (lines.length === 0) continue;
    if (type !== undefined && titlePlaceholders.has(type) && title === undefined) {
      title = lines.map((line) => line.text).join(' ');
      continue;
    }
    html += shapeHtml(lines, type === 'body' || type === 'obj');
  }
  return { title, html };
}

/** The text of a notes page: its body placeholder (the others hold the slide's picture and number). */
function notesHtml(notesXml: string): string {
  const document = parseSlidePart(notesXml);
  return DomUtils.findAll((element) => element.name === 'p:sp', document.children)
    .filter((shape) => placeholderType(shape) === 'body')
    .map((shape) => textLines(childrenNamed(shape, 'p:txBody')[0] ?? shape).map((line) => `<p>${escapeHtml(line.text)}</p>`).join(''))
    .join('');
}

/** Relationship targets by id, resolved against the part they belong to (`ppt/slides/slide1.xml`). */
function relationshipTargets(relationshipsXml: string | undefined, partName: string): Map<string, { type: string; target: string }> {
  const targets = new Map<string, { type: string; target: string }>();
  if (!relationshipsXml) return targets;
  for (const relationship of descendantsNamed(parseDocument(relationshipsXml, { xmlMode: true }), 'Relationship')) {
    const { Id: id, Type: type = '', Target: target, TargetMode: mode } = relationship.attribs;
    if (!id || !target || mode === 'External') continue;
    targets.set(id, { type, target: target.startsWith('/') ? target.slice(1) : path.join(path.dirname(partName), target) });
  }
  return targets;
}

function relationshipsEntryOf(partName: string): string {
  return path.join(path.dirname(partName), '_rels', `${path.basename(partName)}.rels`);
}

/** The slides' part names in the deck's order (presentation.xml's list), else by their file numbers. */
function slideOrder(parts: Map<string, Buffer>): string[] {
  const presentationXml = parts.get(PRESENTATION_ENTRY)?.toString('utf8');
  const targets = relationshipTargets(parts.get(PRESENTATION_RELATIONSHIPS_ENTRY)?.toString('utf8'), PRESENTATION_ENTRY);
  const listed = presentationXml === undefined
    ? []
    : descendantsNamed(parseDocument(presentationXml, { xmlMode: true }), 'p:sldId')
      .map((slide) => targets.get(slide.attribs['r:id'] ?? '')?.target)
      .filter((target): target is string => target !== undefined && parts.has(target));
  if (listed.length > 0) return listed;
  const number = (name: string) => Number(/(\d+)\.xml$/.exec(name)?.[1] ?? 0);
  return [...parts.keys()].filter((name) => /^ppt\/slides\/[^/]+\.xml$/.test(name)).sort((a, b) => number(a) - number(b));
}

async function parsePptx(data: Buffer): Promise<ParsedDocument> {
  if (data.length === 0) throw new DocumentParseError('PPTX', 'the file is empty');
  const parts = await inspectZipArchive(data, 'PPTX', officeDocumentLimits, isKeptEntry);
  const resolveImage = archivePictureResolver(MEDIA_SOURCE_PREFIX, parts, pictureType);
  const slides = slideOrder(parts);
  if (slides.length === 0 && !parts.has(PRESENTATION_ENTRY)) throw new DocumentParseError('PPTX', 'the archive holds no presentation (ppt/presentation.xml)');
  const elements: DocumentElement[] = [];
  let firstSlideTitle: string | undefined;
  slides.forEach((slideName, index) => {
    const page = index + 1;
    const relationships = relationshipTargets(parts.get(relationshipsEntryOf(slideName))?.toString('utf8'), slideName);
    const { title, html } = slideContent(parts.get(slideName)!.toString('utf8'), relationships);
    firstSlideTitle ??= title;
    const notes = [...relationships.values()].find((relationship) => relationship.type.endsWith('/notesSlide'));
    const notesXml = notes ? parts.get(notes.target)?.toString('utf8') : undefined;
    elements.push(...slideElements({ page, title, html, notesHtml: notesXml === undefined ? '' : notesHtml(notesXml) }, { resolveImage }));
  });
  const coreXml = parts.get(CORE_PROPERTIES_ENTRY)?.toString('utf8');
  const title = coreProperty(coreXml, 'dc:title') ?? firstSlideTitle;
  const metadata = { ...coreProperties(coreXml), slides: slides.length };
  return { elements, ...(title !== undefined ? { title } : {}), metadata };
}

const pptxParser: Parser = {
  name: 'pptx',
  contentTypes: ['application/vnd.openxmlformats-officedocument.presentationml.presentation'],
  extensions: ['pptx'],
  // A deck of screenshots or scanned pages has no text to read.
  mayHoldScans: true,
  parse(input: ParserInput): Promise<ParsedDocument> {
    return parsePptx(input.data);
  },
};

export const pptxParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'pptx',
  description: 'PowerPoint (.pptx): slide titles, text, bulleted lists, tables, pictures and speaker notes, each with its slide number; zip bombs and damaged archives refused before decompression',
  create: () => pptxParser,
};
