/**
 * Decodes the HTML character references CommonMark allows in Markdown text ("AT&amp;T", "&#169;"),
 * which `marked`'s lexer leaves encoded because its renderer emits HTML. Numeric references and
 * the named ones that appear in practice are decoded; an unknown name is left as written rather
 * than shipping the 2,231-entry HTML5 table for a search index.
 */
const namedReferences: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', copy: '©', reg: '®',
  trade: '™', hellip: '…', mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', ldquo: '“', rdquo: '”',
  laquo: '«', raquo: '»', middot: '·', bull: '•', deg: '°', times: '×', divide: '÷', euro: '€',
  pound: '£', yen: '¥', cent: '¢', sect: '§', para: '¶', plusmn: '±', micro: 'µ',
};

const characterReference = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));/g;

function fromCodePoint(codePoint: number, written: string): string {
  // CommonMark: code point 0 and invalid code points become U+FFFD.
  if (codePoint === 0 || codePoint > 0x10ffff || (codePoint >= 0xd800 && codePoint <= 0xdfff)) return '\ufffd';
  return Number.isFinite(codePoint) ? String.fromCodePoint(codePoint) : written;
}

export function decodeCharacterReferences(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(characterReference, (written, decimal?: string, hexadecimal?: string, name?: string) => {
    if (decimal !== undefined) return fromCodePoint(Number.parseInt(decimal, 10), written);
    if (hexadecimal !== undefined) return fromCodePoint(Number.parseInt(hexadecimal, 16), written);
    return namedReferences[name as string] ?? written;
  });
}
