/**
 * The `odt` parser: OpenDocument text (LibreOffice Writer, and what Google Docs and Word export as
 * .odt). Headings keep their outline level, so chunks carry their heading path; paragraphs, lists
 * (nested), tables (header rows as the header), footnotes (after their paragraph), text boxes and
 * pictures (`image` elements with their title or description as text, captioned in multimodal
 * collections) come in document order, sections read through. Left out: tracked deletions (a
 * document's deleted text is kept in it), comments, and generated indexes (a table of contents
 * repeats the headings). The title and properties come from meta.xml.
 *
 * Written here rather than taken from a library: the one package for it (odt2html) is little used,
 * and the others give flat text without headings or tables. content.xml is read
 * with htmlparser2 and written as the HTML that Word files and web pages go through
 * (src/parsing/html-elements.ts), as the PowerPoint parser does, so the elements come out alike.
 *
 * The zip container is checked before anything is read (src/parsing/zip-inspection.ts).
 */
import path from 'node:path/posix';
import { DomUtils, parseDocument } from 'htmlparser2';
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { archivePictureResolver } from '../../../src/parsing/archive-pictures.js';
import { DocumentParseError } from '../../../src/parsing/document-parse-error.js';
import { collapseWhitespace } from '../../../src/parsing/document-properties.js';
import { htmlToElements } from '../../../src/parsing/html-elements.js';
import { escapeHtml } from '../../../src/parsing/html-escape.js';
import { OPEN_DOCUMENT_META_ENTRY, openDocumentProperties, openDocumentTitle } from '../../../src/parsing/open-document-meta.js';
import { PORTABLE_IMAGE_TYPES } from '../../../src/parsing/portable-image-types.js';
import { inspectZipArchive, officeDocumentLimits } from '../../../src/parsing/zip-inspection.js';

export const ODT_CONTENT_TYPE = 'application/vnd.oasis.opendocument.text';
const CONTENT_ENTRY = 'content.xml';
const MEDIA_SOURCE_PREFIX = 'odt-media:';
const pictureTypes: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml',
};

function pictureType(partName: string): string {
  return pictureTypes[path.extname(partName).slice(1).toLowerCase()] ?? 'application/octet-stream';
}

function isKeptEntry(name: string): boolean {
  return name === CONTENT_ENTRY || name === OPEN_DOCUMENT_META_ENTRY || (name.startsWith('Pictures/') && PORTABLE_IMAGE_TYPES.has(pictureType(name)));
}

type XmlNode = ReturnType<typeof parseDocument>;
type XmlElement = ReturnType<typeof DomUtils.getElementsByTagName>[number];
type XmlChild = XmlNode['children'][number];

const isElement = (node: XmlChild): node is XmlElement => 'attribs' in node;
const elementChildren = (node: XmlNode | XmlElement): XmlElement[] => node.children.filter(isElement);

/** Kept in a document but not its text: deleted text of tracked changes, comments, declarations. */
const unread = new Set([
  'text:tracked-changes', 'office:annotation', 'office:annotation-end', 'text:sequence-decls', 'text:variable-decls',
  'text:user-field-decls', 'office:forms', 'text:note-citation',
]);
/** Generated from the document itself: read, they repeat its headings or captions. */
const generatedIndexes = new Set([
  'text:table-of-content', 'text:alphabetical-index', 'text:illustration-index', 'text:table-index',
  'text:object-index', 'text:user-index', 'text:bibliography',
]);

/** What a paragraph holds beside its own line: footnotes, text boxes and pictures, written after it. */
interface Attached {
  html: string[];
}

function pictureHtml(frame: XmlElement): string {
  const image = elementChildren(frame).find((child) => child.name === 'draw:image');
  const target = image?.attribs['xlink:href'];
  if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) return '';
  const description = elementChildren(frame).find((child) => child.name === 'svg:title' || child.name === 'svg:desc');
  const alt = description ? collapseWhitespace(DomUtils.textContent(description)) : frame.attribs['draw:name'] ?? '';
  return `<img src="${escapeHtml(MEDIA_SOURCE_PREFIX + path.normalize(target))}" alt="${escapeHtml(alt)}">`;
}

/** A paragraph's text, with what it carries besides set aside in `attached`. */
function inlineText(node: XmlElement, attached: Attached): string {
  let text = '';
  for (const child of node.children) {
    if (!isElement(child)) {
      if (child.type === 'text') text += child.data;
      continue;
    }
    if (unread.has(child.name)) continue;
    if (child.name === 'text:s' || child.name === 'text:tab' || child.name === 'text:line-break') {
      text += ' ';
    } else if (child.name === 'text:note') {
      const body = elementChildren(child).find((part) => part.name === 'text:note-body');
      if (body) attached.html.push(blockHtml(body));
    } else if (child.name === 'draw:frame') {
      attached.html.push(pictureHtml(child));
      const textBox = elementChildren(child).find((part) => part.name === 'draw:text-box');
      if (textBox) attached.html.push(blockHtml(textBox));
    } else {
      text += inlineText(child, attached);
    }
  }
  return text;
}

/** A paragraph or heading as its HTML, followed by what it carries. */
function paragraphHtml(paragraph: XmlElement, tag: string): string {
  const attached: Attached = { html: [] };
  const text = collapseWhitespace(inlineText(paragraph, attached));
  return (text.length > 0 ? `<${tag}>${escapeHtml(text)}</${tag}>` : '') + attached.html.join('');
}

function headingTag(heading: XmlElement): string {
  const level = Math.trunc(Number(heading.attribs['text:outline-level'] ?? 1));
  return `h${Number.isFinite(level) ? Math.min(Math.max(level, 1), 6) : 1}`;
}

/** A list, nested lists inside their items; what its items carry (footnotes, pictures) goes into `attached`, after the list. */
function listHtml(list: XmlElement, attached: Attached): string {
  const items = elementChildren(list).filter((child) => child.name === 'text:list-item' || child.name === 'text:list-header');
  return `<ul>${items.map((item) => {
    const lines: string[] = [];
    let nested = '';
    for (const part of elementChildren(item)) {
      if (part.name === 'text:list') nested += listHtml(part, attached);
      else if (part.name === 'text:p' || part.name === 'text:h') lines.push(collapseWhitespace(inlineText(part, attached)));
    }
    return `<li>${escapeHtml(lines.filter((line) => line.length > 0).join(' '))}${nested}</li>`;
  }).join('')}</ul>`;
}

/** The rows of a table in order: header rows first as written, row groups read through. */
function tableRows(node: XmlElement, header: boolean, rows: Array<{ cells: XmlElement[]; header: boolean }>): void {
  for (const child of elementChildren(node)) {
    if (child.name === 'table:table-row') rows.push({ cells: elementChildren(child).filter((cell) => cell.name === 'table:table-cell'), header });
    else if (child.name === 'table:table-header-rows') tableRows(child, true, rows);
    else if (child.name === 'table:table-rows' || child.name === 'table:table-row-group') tableRows(child, header, rows);
  }
}

/**
 * A table: repeated rows and columns (`number-rows-repeated`, which spreadsheet-like tables use
 * for thousands of empty cells) are written once; empty rows are left out.
 */
function tableHtml(table: XmlElement): string {
  const rows: Array<{ cells: XmlElement[]; header: boolean }> = [];
  tableRows(table, false, rows);
  const html = rows.map(({ cells, header }) => {
    const tag = header ? 'th' : 'td';
    const texts = cells.map((cell) => {
      const attached: Attached = { html: [] };
      return collapseWhitespace(elementChildren(cell).map((part) => inlineText(part, attached)).join(' '));
    });
    return texts.some((text) => text.length > 0) ? `<tr>${texts.map((text) => `<${tag}>${escapeHtml(text)}</${tag}>`).join('')}</tr>` : '';
  }).join('');
  return html.length > 0 ? `<table>${html}</table>` : '';
}

/** The HTML of a body, section or note: its blocks in order. */
function blockHtml(node: XmlNode | XmlElement): string {
  let html = '';
  for (const child of elementChildren(node)) {
    if (unread.has(child.name) || generatedIndexes.has(child.name)) continue;
    if (child.name === 'text:h') html += paragraphHtml(child, headingTag(child));
    else if (child.name === 'text:p') html += paragraphHtml(child, 'p');
    else if (child.name === 'text:list') {
      const attached: Attached = { html: [] };
      html += listHtml(child, attached) + attached.html.join('');
    }
    else if (child.name === 'table:table') html += tableHtml(child);
    else html += blockHtml(child);
  }
  return html;
}

async function parseOdt(data: Buffer): Promise<ParsedDocument> {
  if (data.length === 0) throw new DocumentParseError('ODT', 'the file is empty');
  const parts = await inspectZipArchive(data, 'ODT', officeDocumentLimits, isKeptEntry);
  const contentXml = parts.get(CONTENT_ENTRY)?.toString('utf8');
  if (contentXml === undefined) throw new DocumentParseError('ODT', 'the archive holds no document text (content.xml)');
  const body = DomUtils.findOne((element) => element.name === 'office:text', parseDocument(contentXml, { xmlMode: true }).children);
  if (!body) throw new DocumentParseError('ODT', 'content.xml holds no text body (office:text): not a text document');
  const resolveImage = archivePictureResolver(MEDIA_SOURCE_PREFIX, parts, pictureType);
  const parsed = htmlToElements(blockHtml(body), { resolveImage });
  const metaXml = parts.get(OPEN_DOCUMENT_META_ENTRY)?.toString('utf8');
  const title = openDocumentTitle(metaXml) ?? parsed.title;
  const metadata = openDocumentProperties(metaXml);
  return { elements: parsed.elements, ...(title !== undefined ? { title } : {}), ...(Object.keys(metadata).length > 0 ? { metadata } : {}) };
}

const odtParser: Parser = {
  name: 'odt',
  contentTypes: [ODT_CONTENT_TYPE],
  extensions: ['odt'],
  // A document of scanned pages has no text to read.
  mayHoldScans: true,
  parse(input: ParserInput): Promise<ParsedDocument> {
    return parseOdt(input.data);
  },
};

export const odtParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'odt',
  description: 'OpenDocument text (.odt): headings with their levels, paragraphs, nested lists, tables, footnotes, text boxes and pictures; tracked deletions, comments and generated indexes left out; zip bombs and damaged archives refused before decompression',
  create: () => odtParser,
};
