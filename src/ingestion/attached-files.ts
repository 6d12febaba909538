/**
 * The files a document carries (an email's attachments, ParsedDocument.attachments), read into
 * it: each by the parser its content and name choose, its elements after the document's under a
 * heading of its name (so a chunk of an attached PDF names the file in its heading path). A file
 * that cannot be read (a type no parser takes, a damaged file) does not fail the document: it is
 * listed in the document's `attachments_unread` with the reason.
 */
import type { DocumentElement, ParsedDocument, Parser } from '../plugins.js';
import { reasonOf } from '../parsing/document-parse-error.js';
import { detectParser } from './parser-selection.js';

/** A message attached to a message attached to a message: read this deep, no deeper. */
const MAX_DEPTH = 3;

export async function withAttachedFiles(parsers: readonly Parser[], parsed: ParsedDocument, depth = 0): Promise<ParsedDocument> {
  const { attachments = [], ...document } = parsed;
  if (attachments.length === 0) return document;
  const elements: DocumentElement[] = [...document.elements];
  const unread: string[] = [];
  for (const file of attachments) {
    try {
      if (depth >= MAX_DEPTH) throw new Error(`attached more than ${MAX_DEPTH} levels deep`);
      const choice = await detectParser(parsers, { filename: file.filename, contentType: file.contentType, data: file.data });
      const inner = await withAttachedFiles(parsers, await choice.parser.parse({ filename: file.filename, contentType: choice.contentType, data: file.data }), depth + 1);
      elements.push({ type: 'heading', level: 1, text: file.filename, headingPath: [] });
      for (const element of inner.elements) elements.push({ ...element, headingPath: [file.filename, ...element.headingPath] });
    } catch (error) {
      unread.push(`${file.filename}: ${reasonOf(error)}`);
    }
  }
  const metadata = unread.length > 0 ? { ...document.metadata, attachments_unread: unread } : document.metadata;
  return { ...document, elements, ...(metadata ? { metadata } : {}) };
}
