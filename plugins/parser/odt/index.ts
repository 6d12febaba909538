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
 * and the others give flat text without headings or tables. content.xml is read with htmlparser2
 * and written as HTML (src/parsing/open-document-html.ts), as the PowerPoint parser does.
 *
 * The zip container is checked before anything is read (src/parsing/zip-inspection.ts).
 */
import { DomUtils, parseDocument } from 'htmlparser2';
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { archivePictureResolver } from '../../../src/parsing/archive-pictures.js';
import { DocumentParseError } from '../../../src/parsing/document-parse-error.js';
import { htmlToElements } from '../../../src/parsing/html-elements.js';
import { blockHtml, isKeptPicture, OPEN_DOCUMENT_MEDIA_PREFIX, openDocumentPictureType } from '../../../src/parsing/open-document-html.js';
import { OPEN_DOCUMENT_META_ENTRY, openDocumentProperties, openDocumentTitle } from '../../../src/parsing/open-document-meta.js';
import { inspectZipArchive, officeDocumentLimits } from '../../../src/parsing/zip-inspection.js';

export const ODT_CONTENT_TYPE = 'application/vnd.oasis.opendocument.text';
const CONTENT_ENTRY = 'content.xml';

function isKeptEntry(name: string): boolean {
  return name === CONTENT_ENTRY || name === OPEN_DOCUMENT_META_ENTRY || isKeptPicture(name);
}

async function parseOdt(data: Buffer): Promise<ParsedDocument> {
  if (data.length === 0) throw new DocumentParseError('ODT', 'the file is empty');
  const parts = await inspectZipArchive(data, 'ODT', officeDocumentLimits, isKeptEntry);
  const contentXml = parts.get(CONTENT_ENTRY)?.toString('utf8');
  if (contentXml === undefined) throw new DocumentParseError('ODT', 'the archive holds no document text (content.xml)');
  const body = DomUtils.findOne((element) => element.name === 'office:text', parseDocument(contentXml, { xmlMode: true }).children);
  if (!body) throw new DocumentParseError('ODT', 'content.xml holds no text body (office:text): not a text document');
  const resolveImage = archivePictureResolver(OPEN_DOCUMENT_MEDIA_PREFIX, parts, openDocumentPictureType);
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
