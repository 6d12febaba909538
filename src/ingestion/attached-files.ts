/**
 * The files a document carries (an email's attachments, ParsedDocument.attachments), read into
 * it: each by the parser its content and name choose, its elements after the document's under a
 * heading of its name (so a chunk of an attached PDF names the file in its heading path). An
 * attached picture (PNG, JPEG, GIF, WebP by its content) is an `image` element named by its file,
 * kept and captioned in multimodal collections as a document's own pictures are. A file that
 * cannot be read (a type no parser takes, a damaged file) does not fail the document: it is listed
 * in the document's `attachments_unread` with the reason.
 */
import { fileTypeFromBuffer } from 'file-type';
import type { AttachedFile, DocumentElement, ParsedDocument, Parser } from '../plugins.js';
import { reasonOf } from '../parsing/document-parse-error.js';
import { PORTABLE_IMAGE_TYPES } from '../parsing/portable-image-types.js';
import { detectParser } from './parser-selection.js';

/** A message attached to a message attached to a message: read this deep, no deeper. */
const MAX_DEPTH = 3;

/** The element of an attached picture, or undefined when the file is no picture. */
async function pictureElement(file: AttachedFile): Promise<DocumentElement | undefined> {
  const detected = await fileTypeFromBuffer(file.data).catch(() => undefined);
  if (!detected || !PORTABLE_IMAGE_TYPES.has(detected.mime)) return undefined;
  return { type: 'image', text: file.filename, headingPath: [], image: { data: file.data, contentType: detected.mime }, metadata: { content_type: detected.mime } };
}

export async function withAttachedFiles(parsers: readonly Parser[], parsed: ParsedDocument, depth = 0): Promise<ParsedDocument> {
  const { attachments = [], ...document } = parsed;
  if (attachments.length === 0) return document;
  const elements: DocumentElement[] = [...document.elements];
  const unread: string[] = [];
  for (const file of attachments) {
    try {
      if (depth >= MAX_DEPTH) throw new Error(`attached more than ${MAX_DEPTH} levels deep`);
      const picture = await pictureElement(file);
      if (picture) {
        elements.push(picture);
        continue;
      }
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
