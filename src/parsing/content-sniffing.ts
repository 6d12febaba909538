/**
 * What a file's first bytes say about it when no magic number does (binary formats are
 * recognised by file-type): binary or text, and for text the format it looks like.
 */
import { decodeTextBuffer } from './decode-text.js';

/** Control bytes that never appear in text (tab, line breaks, form feed and escape do). */
function isControlByte(byte: number): boolean {
  return (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0c && byte !== 0x0d && byte !== 0x1b) || byte === 0x7f;
}

function isUtf8(sample: Uint8Array): boolean {
  try {
    // stream: a sample cut inside a multi-byte character is still UTF-8.
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/** A UTF-8 or UTF-16 byte-order mark: the file says it is text. */
export function hasByteOrderMark(sample: Uint8Array): boolean {
  return (sample[0] === 0xff && sample[1] === 0xfe) || (sample[0] === 0xfe && sample[1] === 0xff)
    || (sample[0] === 0xef && sample[1] === 0xbb && sample[2] === 0xbf);
}

/**
 * True for data no text parser should read. A byte-order mark means text. Otherwise
 * binary is: more than 30% control bytes, or not UTF-8 with more than 5% control bytes (random
 * or compressed data; Latin-1 text is not UTF-8 either but has almost no control bytes). A few
 * stray NULs in UTF-8 text do not make it binary: the text decoder drops them.
 */
export function looksBinary(sample: Uint8Array): boolean {
  if (hasByteOrderMark(sample)) return false;
  let control = 0;
  for (const byte of sample) if (isControlByte(byte)) control++;
  const share = control / Math.max(sample.length, 1);
  return share > 0.3 || (share > 0.05 && !isUtf8(sample));
}

const htmlStart = /^\uFEFF?\s*(?:<\?xml[^>]*>\s*)?(?:<!--[\s\S]*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]/i;

/** An HTML page whatever its name says: markup from the first tag on. */
export function startsAsHtml(text: string): boolean {
  return htmlStart.test(text);
}

/** Complete, non-empty lines of a sample (the last line may be cut when the sample is partial). */
function sampleLines(text: string, complete: boolean, limit: number): string[] {
  const lines = text.split('\n');
  if (!complete) lines.pop();
  return lines.filter((line) => line.trim().length > 0).slice(0, limit);
}

export function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The delimiter splitting every line (3 at least, quoted fields removed) into the same number of fields, if one does. */
function tableDelimiter(lines: string[]): '\t' | ',' | ';' | undefined {
  if (lines.length < 3) return undefined;
  for (const delimiter of ['\t', ',', ';'] as const) {
    const counts = lines.map((line) => line.split(delimiter).length - 1);
    // One comma per line is common in prose; a table needs it on more lines to be believed.
    const enough = counts[0]! >= 2 || (delimiter === '\t' && counts[0]! >= 1) || lines.length >= 5;
    if (counts[0]! > 0 && enough && counts.every((count) => count === counts[0])) return delimiter;
  }
  return undefined;
}

/**
 * The content type a text sample looks like: text/html, application/json,
 * application/x-ndjson, text/csv, text/tab-separated-values, text/markdown or text/plain.
 * `complete` says whether the sample is the whole file.
 */
export function sniffTextType(sample: Uint8Array, complete: boolean): string {
  const text = decodeTextBuffer(sample);
  if (startsAsHtml(text)) return 'text/html';
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const lines = sampleLines(text, complete, 5);
    if (lines.length > 1 && lines.every(parsesAsJson)) return 'application/x-ndjson';
    if (!complete || parsesAsJson(text)) return 'application/json';
  }
  // Quoted fields may hold delimiters and line breaks: count outside them.
  const delimiter = tableDelimiter(sampleLines(text.replace(/"(?:[^"]|"")*"/g, '""'), complete, 20));
  if (delimiter === '\t') return 'text/tab-separated-values';
  if (delimiter) return 'text/csv';
  if (/^#{1,6}[ \t]+\S/m.test(text) || /^(?:```|~~~)/m.test(text) || /\[[^\]\n]+\]\([^)\s]+\)/.test(text)) return 'text/markdown';
  return 'text/plain';
}
