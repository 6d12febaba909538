/**
 * Bytes of an uploaded text file → string.
 *
 * A UTF-16 byte-order mark selects UTF-16 (Windows "Unicode" exports). Otherwise UTF-8 is tried
 * strictly; a file that is not valid UTF-8 is read as Latin-1 (ISO-8859-1), where every byte is a
 * character, because the commonest non-UTF-8 uploads are Western legacy files (Latin-1 or
 * Windows-1252 exports) and a lossy U+FFFD decode would destroy their accented letters.
 * A byte-order mark is never part of the text, and line endings become "\n" so parsers split
 * paragraphs one way. NUL characters are dropped: PostgreSQL text cannot hold them, and they carry
 * nothing a reader needs.
 */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function startsWith(data: Uint8Array, ...bytes: number[]): boolean {
  return bytes.every((byte, index) => data[index] === byte);
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
      const withoutBom = startsWith(data, 0xef, 0xbb, 0xbf) ? data.subarray(3) : data;
      text = Buffer.from(withoutBom.buffer, withoutBom.byteOffset, withoutBom.byteLength).toString('latin1');
    }
  }
  return text.replace(/\r\n?/g, '\n').replaceAll('\u0000', '');
}
