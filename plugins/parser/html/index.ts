/**
 * The `html` parser: a web page's readable content as elements (src/parsing/html-elements.ts),
 * without its chrome: scripts, styles, nav, header, footer, aside, forms, hidden elements and
 * cookie/consent banners are dropped with their content (src/parsing/html-boilerplate.ts).
 *
 * Pictures embedded in the page as `data:` URIs become `image` elements. Remote <img src> URLs are
 * not fetched: a parser that made requests on behalf of an uploaded page would let any uploader
 * reach the service's network.
 *
 * The page's <meta name="author">, "description" and "keywords" are its metadata (`author`,
 * `description`, `keywords` as a list); HTML declares no dates.
 *
 * The bytes are decoded as the HTML standard's encoding sniffing does: a byte-order mark wins, else
 * the encoding a <meta charset> or <meta http-equiv="Content-Type"> names in the first 1024 bytes
 * (a Shift_JIS or KOI8-R page says so there, and guessing would give mojibake), else the guess
 * every text format gets (src/parsing/decode-text.ts). One exception: bytes that are valid UTF-8
 * are read as UTF-8 whatever the <meta> says. Only whole pages: raw HTML in Markdown is decoded
 * with its Markdown file.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { hasByteOrderMark } from '../../../src/parsing/content-sniffing.js';
import { decodeTextBuffer, decodeWindows1252, normalizeDecodedText } from '../../../src/parsing/decode-text.js';
import { htmlToElements, type ResolvedImage } from '../../../src/parsing/html-elements.js';

const embeddedImage = /^data:(image\/[\w.+-]+);base64,([A-Za-z0-9+/=\s]+)$/i;

function resolveDataUri(src: string): ResolvedImage | undefined {
  const match = embeddedImage.exec(src.trim());
  if (!match) return undefined;
  const data = Buffer.from(match[2]!, 'base64');
  return data.length > 0 ? { image: { data, contentType: match[1]!.toLowerCase() } } : undefined;
}

/** The standard's prescan reads this many bytes for a <meta> naming the encoding. */
const PRESCAN_BYTES = 1024;

const metaAttribute = /([^\s"'=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;
const contentTypeCharset = /charset\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s;"']+))/i;

/** A <meta>'s attributes by lowercase name; a repeated attribute keeps its first value, as in the prescan. */
function metaAttributes(tag: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const [, name, doubleQuoted, singleQuoted, bare] of tag.matchAll(metaAttribute)) {
    const key = name!.toLowerCase();
    if (!attributes.has(key)) attributes.set(key, doubleQuoted ?? singleQuoted ?? bare ?? '');
  }
  return attributes;
}

/** The decoder's name for a label (`sjis` → shift_jis), or undefined for one Node cannot decode. */
function supportedEncoding(label: string): string | undefined {
  try {
    return new TextDecoder(label.trim()).encoding;
  } catch {
    return undefined;
  }
}

/** The first supported encoding a <meta> names in the page's first bytes; comments do not count. */
function declaredEncoding(data: Buffer): string | undefined {
  // Latin-1 maps each byte to one character, so the ASCII of the markup reads alike in every encoding.
  const head = data.subarray(0, PRESCAN_BYTES).toString('latin1').replace(/<!--[\s\S]*?(?:-->|$)/g, '');
  for (const [tag] of head.matchAll(/<meta[\s/][^>]*/gi)) {
    const attributes = metaAttributes(tag.slice('<meta'.length));
    const pragma = attributes.get('http-equiv')?.trim().toLowerCase() === 'content-type'
      ? contentTypeCharset.exec(attributes.get('content') ?? '')?.slice(1).find((value) => value !== undefined)
      : undefined;
    const label = attributes.get('charset') ?? pragma;
    const encoding = label === undefined ? undefined : supportedEncoding(label);
    if (encoding !== undefined) return encoding;
  }
  return undefined;
}

/**
 * Bytes that are valid UTF-8 and not all ASCII are UTF-8 whatever a <meta> says: legacy text is
 * practically never valid UTF-8 by chance (é alone in windows-1252 is not; 東 in Shift_JIS starts with
 * a continuation byte), while a page an editor or a "save as" converted to UTF-8 often keeps its old
 * declaration, and reading it as declared would turn every accent into mojibake.
 */
function isNonAsciiUtf8(data: Buffer): boolean {
  return !isAscii(data) && isUtf8(data);
}

function decodeHtml(data: Buffer): string {
  const encoding = hasByteOrderMark(data) ? undefined : declaredEncoding(data);
  // A page that names UTF-16 in ASCII bytes is not UTF-16: the standard reads it as UTF-8.
  if (encoding === undefined || encoding === 'utf-8' || encoding.startsWith('utf-16') || isNonAsciiUtf8(data)) return decodeTextBuffer(data);
  // Node 20's TextDecoder reads windows-1252 (also what iso-8859-1, latin1 and ascii name) as Latin-1.
  const text = encoding === 'windows-1252' ? decodeWindows1252(data) : new TextDecoder(encoding).decode(data);
  return normalizeDecodedText(text);
}

function parseHtml(html: string): ParsedDocument {
  return htmlToElements(html, { resolveImage: resolveDataUri, documentProperties: true });
}

const htmlParser: Parser = {
  name: 'html',
  contentTypes: ['text/html', 'application/xhtml+xml'],
  extensions: ['html', 'htm', 'xhtml'],
  async parse(input: ParserInput): Promise<ParsedDocument> {
    return parseHtml(decodeHtml(input.data));
  },
};

export const htmlParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'html',
  description: 'HTML via htmlparser2: headings, paragraphs, lists, tables, pre blocks, embedded images; skips scripts, page chrome and cookie banners',
  create: () => htmlParser,
};
