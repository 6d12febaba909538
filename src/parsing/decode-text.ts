/**
 * Bytes of an uploaded text file → string.
 *
 * A UTF-16 byte-order mark selects UTF-16 (Windows "Unicode" exports). Otherwise UTF-8 is tried
 * strictly. A file that is not valid UTF-8 is read as Windows-1252, because the commonest
 * non-UTF-8 uploads are Western legacy files: Latin-1 is Windows-1252 but for 0x80-0x9F, where
 * Windows-1252 has its curly quotes, dashes and euro sign (read as Latin-1 they were control
 * characters, and dropped), and a lossy U+FFFD decode would destroy the accented letters. A file
 * that is UTF-8 but for a few stray bytes (one pasted Latin-1 "é") keeps its UTF-8 text, only the
 * stray bytes read as Windows-1252: read whole as Windows-1252 its "Café" became "CafÃ©".
 * A byte-order mark is never part of the text, and line endings become "\n" so parsers split
 * paragraphs one way. NUL characters are dropped: PostgreSQL text cannot hold them, and they carry
 * nothing a reader needs.
 */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Windows-1252's characters for 0x80-0x9F (the five bytes it leaves undefined stay C1 controls,
 * as in the WHATWG table). Node 20's TextDecoder('windows-1252') decodes these bytes as Latin-1.
 */
const WINDOWS_1252_80_TO_9F = '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f'
  + '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

/** Windows-1252 bytes → string: Latin-1 but for 0x80-0x9F. */
export function decodeWindows1252(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('latin1')
    .replace(/[\u0080-\u009f]/g, (character) => WINDOWS_1252_80_TO_9F[character.charCodeAt(0) - 0x80]!);
}

function startsWith(data: Uint8Array, ...bytes: number[]): boolean {
  return bytes.every((byte, index) => data[index] === byte);
}

/** The length of the well-formed UTF-8 sequence of more than one byte at `index`, or 0 (RFC 3629: no overlongs, surrogates or code points past U+10FFFF). */
function multibyteSequenceLength(data: Uint8Array, index: number): number {
  const first = data[index]!;
  const length = first >= 0xc2 && first <= 0xdf ? 2 : first >= 0xe0 && first <= 0xef ? 3 : first >= 0xf0 && first <= 0xf4 ? 4 : 0;
  if (length === 0 || index + length > data.length) return 0;
  for (let offset = 1; offset < length; offset++) if ((data[index + offset]! & 0xc0) !== 0x80) return 0;
  const second = data[index + 1]!;
  if ((first === 0xe0 && second < 0xa0) || (first === 0xed && second > 0x9f) || (first === 0xf0 && second < 0x90) || (first === 0xf4 && second > 0x8f)) return 0;
  return length;
}

/** One byte as Windows-1252 reads it. */
function windows1252Character(byte: number): string {
  return byte >= 0x80 && byte <= 0x9f ? WINDOWS_1252_80_TO_9F[byte - 0x80]! : String.fromCharCode(byte);
}

/**
 * Text that is not valid UTF-8: UTF-8 with stray bytes when its well-formed multi-byte sequences
 * outnumber its stray bytes, each stray byte then read as Windows-1252; else Windows-1252 whole.
 * The first pass only counts, so a legacy file is decoded once.
 */
function decodeNotUtf8(data: Uint8Array): string {
  let multibyte = 0;
  let stray = 0;
  for (let index = 0; index < data.length;) {
    const length = data[index]! < 0x80 ? 1 : multibyteSequenceLength(data, index);
    if (length > 1) multibyte++;
    else if (length === 0) stray++;
    index += Math.max(length, 1);
  }
  if (multibyte <= stray) return decodeWindows1252(data);
  const pieces: string[] = [];
  let runStart = 0;
  for (let index = 0; index < data.length;) {
    const length = data[index]! < 0x80 ? 1 : multibyteSequenceLength(data, index);
    if (length > 0) {
      index += length;
      continue;
    }
    pieces.push(strictUtf8.decode(data.subarray(runStart, index)), windows1252Character(data[index]!));
    runStart = ++index;
  }
  pieces.push(strictUtf8.decode(data.subarray(runStart)));
  return pieces.join('');
}

/** One kind of line ending, so parsers split paragraphs one way, and no NUL, which PostgreSQL text cannot hold. */
export function normalizeDecodedText(text: string): string {
  return text.replace(/\r\n?/g, '\n').replaceAll('\u0000', '');
}

export function decodeTextBuffer(data: Uint8Array): string {
  let text: string;
  if (startsWith(data, 0xff, 0xfe)) text = new TextDecoder('utf-16le').decode(data);
  else if (startsWith(data, 0xfe, 0xff)) text = new TextDecoder('utf-16be').decode(data);
  else {
    try {
      // The decoder drops a UTF-8 BOM itself (ignoreBOM defaults to false).
      text = strictUtf8.decode(data);
    } catch {
      text = decodeNotUtf8(startsWith(data, 0xef, 0xbb, 0xbf) ? data.subarray(3) : data);
    }
  }
  return normalizeDecodedText(text);
}
