/**
 * The `odp` parser: OpenDocument presentations (LibreOffice Impress, and what Google Slides and
 * PowerPoint export as .odp), read as PowerPoint decks are: slide by slide, `page` = the slide's
 * number, its title as a heading, then its text boxes, lists, tables and pictures in the order the
 * slide lists them, then its speaker notes (`speaker_notes: true`). Date, footer, header and
 * slide-number placeholders are left out (they repeat on every slide), and so are the slide
 * thumbnails of notes pages. The title and properties come from meta.xml, the title else the first
 * slide's.
 *
 * The slide markup is OpenDocument's own text markup (text:p, text:list, table:table) inside
 * frames, so it is written as HTML by src/parsing/open-document-html.ts, as text documents are.
 * The zip container is checked before anything is read (src/parsing/zip-inspection.ts).
 */
import { DomUtils, parseDocument } from 'htmlparser2';
import type { DocumentElement, ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { archivePictureResolver } from '../../../src/parsing/archive-pictures.js';
import { DocumentParseError } from '../../../src/parsing/document-parse-error.js';
import { collapseWhitespace } from '../../../src/parsing/document-properties.js';
import {
  blockHtml, elementChildren, isKeptPicture, OPEN_DOCUMENT_MEDIA_PREFIX, openDocumentPictureType, pictureHtml, tableHtml, type XmlElement,
} from '../../../src/parsing/open-document-html.js';
import { OPEN_DOCUMENT_META_ENTRY, openDocumentProperties, openDocumentTitle } from '../../../src/parsing/open-document-meta.js';
import { slideElements } from '../../../src/parsing/slide-elements.js';
import { inspectZipArchive, officeDocumentLimits } from '../../../src/parsing/zip-inspection.js';

export const ODP_CONTENT_TYPE = 'application/vnd.oasis.opendocument.presentation';
const CONTENT_ENTRY = 'content.xml';

/** Placeholders Impress fills with the same thing on every slide. */
const repeatedPlaceholders = new Set(['date-time', 'footer', 'header', 'page-number', 'page']);
/** Shapes that hold text of their own (a frame holds a text box, a table or a picture instead). */
const textShapes = new Set(['draw:custom-shape', 'draw:rect', 'draw:ellipse', 'draw:circle', 'draw:polygon', 'draw:path', 'draw:line', 'draw:connector']);

function isKeptEntry(name: string): boolean {
  return name === CONTENT_ENTRY || name === OPEN_DOCUMENT_META_ENTRY || isKeptPicture(name);
}

/** A frame or shape of a slide as HTML, or its title text when it is the slide's title. */
function shapeContent(shape: XmlElement): { title?: string; html: string } {
  const placeholder = shape.attribs['presentation:class'];
  if (placeholder !== undefined && repeatedPlaceholders.has(placeholder)) return { html: '' };
  if (textShapes.has(shape.name)) return { html: blockHtml(shape) };
  let html = '';
  for (const part of elementChildren(shape)) {
    if (part.name === 'draw:text-box') html += blockHtml(part);
    else if (part.name === 'table:table') html += tableHtml(part);
    else if (part.name === 'draw:image') html += pictureHtml(shape);
  }
  if (placeholder === 'title') {
    const title = collapseWhitespace(DomUtils.textContent(shape));
    if (title.length > 0) return { title, html: '' };
  }
  return { html };
}

/** The shapes of a slide in its order, groups read through; notes apart. */
function slideShapes(node: XmlElement): XmlElement[] {
  return elementChildren(node).flatMap((child) => {
    if (child.name === 'presentation:notes') return [];
    if (child.name === 'draw:g') return slideShapes(child);
    return child.name === 'draw:frame' || textShapes.has(child.name) ? [child] : [];
  });
}

async function parseOdp(data: Buffer): Promise<ParsedDocument> {
  if (data.length === 0) throw new DocumentParseError('ODP', 'the file is empty');
  const parts = await inspectZipArchive(data, 'ODP', officeDocumentLimits, isKeptEntry);
  const contentXml = parts.get(CONTENT_ENTRY)?.toString('utf8');
  if (contentXml === undefined) throw new DocumentParseError('ODP', 'the archive holds no slides (content.xml)');
  const presentation = DomUtils.findOne((element) => element.name === 'office:presentation', parseDocument(contentXml, { xmlMode: true }).children);
  if (!presentation) throw new DocumentParseError('ODP', 'content.xml holds no presentation (office:presentation): not a presentation');
  const resolveImage = archivePictureResolver(OPEN_DOCUMENT_MEDIA_PREFIX, parts, openDocumentPictureType);
  const slides = elementChildren(presentation).filter((child) => child.name === 'draw:page');
  const elements: DocumentElement[] = [];
  let firstSlideTitle: string | undefined;
  slides.forEach((slide, index) => {
    const page = index + 1;
    let title: string | undefined;
    let html = '';
    for (const shape of slideShapes(slide)) {
      const content = shapeContent(shape);
      if (content.title !== undefined && title === undefined) title = content.title;
      else html += content.html;
    }
    firstSlideTitle ??= title;
    const notes = elementChildren(slide).find((child) => child.name === 'presentation:notes');
    const notesHtml = notes ? slideShapes(notes).filter((shape) => shape.attribs['presentation:class'] === 'notes').map((shape) => shapeContent(shape).html).join('') : '';
    elements.push(...slideElements({ page, title, html, notesHtml }, { resolveImage }));
  });
  const metaXml = parts.get(OPEN_DOCUMENT_META_ENTRY)?.toString('utf8');
  const title = openDocumentTitle(metaXml) ?? firstSlideTitle;
  return { elements, ...(title !== undefined ? { title } : {}), metadata: { ...openDocumentProperties(metaXml), slides: slides.length } };
}

const odpParser: Parser = {
  name: 'odp',
  contentTypes: [ODP_CONTENT_TYPE],
  extensions: ['odp'],
  // A deck of screenshots or scanned pages has no text to read.
  mayHoldScans: true,
  parse(input: ParserInput): Promise<ParsedDocument> {
    return parseOdp(input.data);
  },
};

export const odpParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'odp',
  description: 'OpenDocument presentations (.odp): slide titles, text, lists, tables, pictures and speaker notes, each with its slide number; zip bombs and damaged archives refused before decompression',
  create: () => odpParser,
};
