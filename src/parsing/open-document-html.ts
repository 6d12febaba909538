/**
 * OpenDocument markup (content.xml of text documents and presentations) written as the HTML that
 * Word files and web pages go through (html-elements.ts), so headings, lists and tables come out
 * alike: paragraphs and headings with their outline levels, nested lists, tables (header rows as
 * the header), footnotes after their paragraph, text boxes, and pictures as <img> naming their
 * part in the archive (archivePictureResolver reads them back). Left out: tracked deletions (a
 * document keeps its deleted text), comments, and generated indexes (a table of contents repeats
 * the headings).
 */
import path from 'node:path/posix';
import { DomUtils, type parseDocument } from 'htmlparser2';
import { collapseWhitespace } from './document-properties.js';
import { escapeHtml } from './html-escape.js';
import { PORTABLE_IMAGE_TYPES } from './portable-image-types.js';

/** The prefix of an <img> src naming a picture's part in the archive. */
export const OPEN_DOCUMENT_MEDIA_PREFIX = 'odf-media:';

const pictureTypes: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml',
};

export function openDocumentPictureType(partName: string): string {
  return pictureTypes[path.extname(partName).slice(1).toLowerCase()] ?? 'application/octet-stream';
}

export type XmlNode = ReturnType<typeof parseDocument>;
export type XmlElement = ReturnType<typeof DomUtils.getElementsByTagName>[number];
type XmlChild = XmlNode['children'][number];

const isElement = (node: XmlChild): node is XmlElement => 'attribs' in node;
export const elementChildren = (node: XmlNode | XmlElement): XmlElement[] => node.children.filter(isElement);

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

export function pictureHtml(frame: XmlElement): string {
  const image = elementChildren(frame).find((child) => child.name === 'draw:image');
  const target = image?.attribs['xlink:href'];
  if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) return '';
  const description = elementChildren(frame).find((child) => child.name === 'svg:title' || child.name === 'svg:desc');
  const alt = description ? collapseWhitespace(DomUtils.textContent(description)) : frame.attribs['draw:name'] ?? '';
  return `<img src="${escapeHtml(OPEN_DOCUMENT_MEDIA_PREFIX + path.normalize(target))}" alt="${escapeHtml(alt)}">`;
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
export function tableHtml(table: XmlElement): string {
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

/** The HTML of a body, section, note or text box: its blocks in order. */
export function blockHtml(node: XmlNode | XmlElement): string {
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

/** A picture the archive keeps with its bytes (a portable image type under Pictures/). */
export function isKeptPicture(name: string): boolean {
  return name.startsWith('Pictures/') && PORTABLE_IMAGE_TYPES.has(openDocumentPictureType(name));
}
