/**
 * Which parser reads a file, judged by its content first and its name second: clients send
 * application/octet-stream, misname exports and rename files, so neither the declared type nor
 * the extension is trusted alone.
 *
 * 1. Empty content is refused (400): there is nothing to index.
 * 2. A binary signature found by file-type (magic bytes) decides: a PDF named notes.txt is read
 *    as PDF; a zip holding word/document.xml is a DOCX; an image, archive or executable is refused
 *    (415) whatever its name. A zip whose head does not show its entries (a truncated DOCX, PPTX
 *    or XLSX) keeps
 *    the zip-based format its name claims, so the parser can say what is wrong with it. Some
 *    signatures are one or two bytes (an MPEG transport stream is "G" at offsets 0 and 188), which
 *    prose matches: content without a binary byte, named or declared as text, stays text.
 * 3. Binary data without a known signature is refused (415), even when named .txt.
 * 4. Text: the extension, then the declared content type, pick among the text parsers; HTML
 *    markup from the first tag on overrides a text or Markdown name. A binary format's name on
 *    text content (a .pdf that is plain text), or a name no parser claims, leaves the choice to
 *    the content (JSON, JSON Lines, CSV, TSV, HTML, Markdown, else plain text).
 *
 * At upload only the first 64 KB are judged (`inspectUpload`), so a refused file is never
 * stored; ingestion judges the whole stored file again (`detectParser`).
 */
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import { BadRequestError, UnsupportedMediaTypeError } from '../errors.js';
import type { Parser } from '../plugins.js';
import { hasByteOrderMark, looksBinary, sniffTextType, startsAsHtml } from '../parsing/content-sniffing.js';
import { decodeTextBuffer } from '../parsing/decode-text.js';
import { readStreamHead } from '../parsing/stream-head.js';

export interface ParserChoice {
  parser: Parser;
  /** The content type the service records for the document. */
  contentType: string;
}

export interface FileSample {
  filename: string;
  /** The type the client declared, if any. */
  contentType: string | undefined;
  /** The file, or its first bytes. */
  data: Uint8Array;
  /** False when `data` is only the beginning of the file. */
  complete?: boolean;
}

/** Bytes of an upload judged before it is stored. */
export const UPLOAD_SAMPLE_BYTES = 64 * 1024;

const docxType = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
/** The zip end-of-central-directory signature, within the last 64 KB + 22 bytes of an archive. */
const endOfCentralDirectory = Buffer.from([0x50, 0x4b, 0x05, 0x06]);
const zipBasedTypes = new Set([
  docxType,
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.oasis.opendocument.text',
  'application/vnd.oasis.opendocument.spreadsheet',
  'application/vnd.oasis.opendocument.presentation',
]);
/** file-type also recognises some text formats; those are judged as text. */
const textualDetections = new Set(['xml', 'vtt', 'ics', 'vcf', 'reg']);
/** Declared types that say nothing about the content. */
const uninformativeTypes = new Set(['', 'application/octet-stream', 'binary/octet-stream', 'application/unknown', 'application/x-unknown']);

function baseType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

const isTextType = (type: string) => type.startsWith('text/') || /[/+](?:json|x-ndjson|jsonl|x-jsonlines|xml|csv)$/.test(type)
  || type === 'application/xhtml+xml' || type === 'message/rfc822';

/** Extensions whose parser reads more than one format: the type recorded is the one the name says, not the parser's first. */
const typeOfExtension: Readonly<Record<string, string>> = {
  jsonl: 'application/x-ndjson', ndjson: 'application/x-ndjson',
  tsv: 'text/tab-separated-values', tab: 'text/tab-separated-values',
  xhtml: 'application/xhtml+xml',
};

function parserForType(parsers: readonly Parser[], type: string): ParserChoice | null {
  const parser = parsers.find((candidate) => candidate.contentTypes.includes(type));
  return parser ? { parser, contentType: type } : null;
}

/**
 * The parser the name claims: the file extension first (clients often send
 * application/octet-stream), then the declared content type. null when neither names a parser.
 */
function selectParser(parsers: readonly Parser[], filename: string, contentType: string | undefined): ParserChoice | null {
  const extension = path.extname(filename).slice(1).toLowerCase();
  const byExtension = extension ? parsers.find((parser) => parser.extensions.includes(extension)) : undefined;
  if (byExtension) {
    const named = typeOfExtension[extension];
    return { parser: byExtension, contentType: named && byExtension.contentTypes.includes(named) ? named : byExtension.contentTypes[0] ?? baseType(contentType) };
  }
  const type = baseType(contentType);
  return uninformativeTypes.has(type) ? null : parserForType(parsers, type);
}

export function supportedTypesDescription(parsers: readonly Parser[]): string {
  const extensions = [...new Set(parsers.flatMap((parser) => parser.extensions))].map((extension) => `.${extension}`);
  const types = [...new Set(parsers.flatMap((parser) => parser.contentTypes))];
  return `${extensions.join(', ')} (${types.join(', ')})`;
}

function unsupported(parsers: readonly Parser[], filename: string, what: string): UnsupportedMediaTypeError {
  return new UnsupportedMediaTypeError(`Unsupported file type: "${filename}" ${what}; supported: ${supportedTypesDescription(parsers)}`);
}

/** The binary format the magic bytes show, or undefined for text and unknown data. */
async function binarySignature(data: Uint8Array): Promise<{ ext: string; mime: string } | undefined> {
  // A byte-order mark starts text; 0xFF 0xFE would otherwise pass for an MPEG audio frame.
  if (hasByteOrderMark(data)) return undefined;
  // file-type reads zip entries to tell DOCX from XLSX; a damaged archive is then no signature.
  const detected = await fileTypeFromBuffer(data).catch(() => undefined);
  return detected && !textualDetections.has(detected.ext) ? detected : undefined;
}

function chooseBinary(parsers: readonly Parser[], sample: FileSample, byName: ParserChoice | null, signature: { ext: string; mime: string }): ParserChoice {
  const chosen = parserForType(parsers, signature.mime);
  if (chosen) return chosen;
  if (signature.mime === 'application/zip') {
    const bytes = Buffer.from(sample.data.buffer, sample.data.byteOffset, sample.data.byteLength);
    const docx = bytes.includes('word/document.xml') ? parserForType(parsers, docxType) : null;
    if (docx) return docx;
    // A whole, intact archive lists every entry in its central directory: no word/document.xml
    // there means it is not a DOCX. A head, or a truncated archive, may just not show it yet.
    const intact = (sample.complete ?? true) && bytes.subarray(-65_557).includes(endOfCentralDirectory);
    if (byName && zipBasedTypes.has(byName.contentType) && !intact) return byName;
  }
  throw unsupported(parsers, sample.filename, `is ${signature.ext.toUpperCase()} data (${signature.mime}) by its content`);
}

function chooseText(parsers: readonly Parser[], sample: FileSample, byName: ParserChoice | null): ParserChoice {
  const complete = sample.complete ?? true;
  if (byName && isTextType(byName.contentType)) {
    const plainName = byName.contentType === 'text/plain' || byName.contentType === 'text/markdown';
    const html = plainName && startsAsHtml(decodeTextBuffer(sample.data.subarray(0, 4096))) ? parserForType(parsers, 'text/html') : null;
    return html ?? byName;
  }
  const sniffed = sniffTextType(sample.data, complete);
  const chosen = parserForType(parsers, sniffed) ?? parserForType(parsers, 'text/plain');
  if (!chosen) throw unsupported(parsers, sample.filename, 'is text, and no text parser is installed');
  return chosen;
}

/** The parser for a file, judged by its content and name; throws 400 (empty) or 415 (unsupported). */
export async function detectParser(parsers: readonly Parser[], sample: FileSample): Promise<ParserChoice> {
  if (sample.data.length === 0) throw new BadRequestError(`File "${sample.filename}" is empty: there is nothing to index`);
  const byName = selectParser(parsers, sample.filename, sample.contentType);
  const signature = await binarySignature(sample.data);
  const binary = looksBinary(sample.data.subarray(0, UPLOAD_SAMPLE_BYTES));
  const textByName = byName !== null && isTextType(byName.contentType) && !binary;
  if (signature && !(textByName && !parserForType(parsers, signature.mime) && signature.mime !== 'application/zip')) {
    return chooseBinary(parsers, sample, byName, signature);
  }
  if (binary) throw unsupported(parsers, sample.filename, 'holds binary data of no supported format');
  return chooseText(parsers, sample, byName);
}

export interface InspectedUpload {
  choice: ParserChoice;
  /** The whole upload, first bytes included, to store: the bytes themselves when it fit in the sample. */
  content: Buffer | Readable;
}

/**
 * Judges an upload stream by its first UPLOAD_SAMPLE_BYTES and returns the parser choice with the
 * whole file. A refused upload's stream is drained (so a multipart body can go on to its next
 * part) before the 400/415 is thrown.
 */
export async function inspectUpload(parsers: readonly Parser[], upload: { filename: string; contentType: string | undefined; stream: Readable }): Promise<InspectedUpload> {
  const { head, content } = await readStreamHead(upload.stream, UPLOAD_SAMPLE_BYTES);
  try {
    const choice = await detectParser(parsers, { filename: upload.filename, contentType: upload.contentType, data: head, complete: Buffer.isBuffer(content) });
    return { choice, content };
  } catch (error) {
    if (!Buffer.isBuffer(content)) content.resume();
    throw error;
  }
}
