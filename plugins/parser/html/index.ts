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
 */
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { decodeTextBuffer } from '../../../src/parsing/decode-text.js';
import { htmlToElements, type ResolvedImage } from '../../../src/parsing/html-elements.js';

const embeddedImage = /^data:(image\/[\w.+-]+);base64,([A-Za-z0-9+/=\s]+)$/i;

function resolveDataUri(src: string): ResolvedImage | undefined {
  const match = embeddedImage.exec(src.trim());
  if (!match) return undefined;
  const data = Buffer.from(match[2]!, 'base64');
  return data.length > 0 ? { image: { data, contentType: match[1]!.toLowerCase() } } : undefined;
}

function parseHtml(html: string): ParsedDocument {
  return htmlToElements(html, { resolveImage: resolveDataUri, documentProperties: true });
}

const htmlParser: Parser = {
  name: 'html',
  contentTypes: ['text/html', 'application/xhtml+xml'],
  extensions: ['html', 'htm', 'xhtml'],
  async parse(input: ParserInput): Promise<ParsedDocument> {
    return parseHtml(decodeTextBuffer(input.data));
  },
};

export const htmlParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'html',
  description: 'HTML via htmlparser2: headings, paragraphs, lists, tables, pre blocks, embedded images; skips scripts, page chrome and cookie banners',
  create: () => htmlParser,
};
