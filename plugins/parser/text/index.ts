/**
 * The `text` parser: plain text files become one `paragraph` element per block of lines separated
 * by a blank line (a line holding only spaces or tabs counts as blank). Line breaks inside a
 * paragraph are kept: the chunker splits on them before splitting sentences.
 */
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { decodeTextBuffer } from '../../../src/parsing/decode-text.js';

const blankLines = /\n[ \t]*\n/;

export function parsePlainText(text: string): ParsedDocument {
  const elements = text
    .split(blankLines)
    .map((paragraph) => paragraph.trim())
    .filter((paragraph) => paragraph.length > 0)
    .map((paragraph) => ({ type: 'paragraph' as const, text: paragraph, headingPath: [] }));
  return { elements };
}

const textParser: Parser = {
  name: 'text',
  contentTypes: ['text/plain'],
  extensions: ['txt', 'text', 'log'],
  async parse(input: ParserInput): Promise<ParsedDocument> {
    return parsePlainText(decodeTextBuffer(input.data));
  },
};

export const textParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'text',
  description: 'Plain text: paragraphs separated by blank lines; UTF-8, or Latin-1 when not valid UTF-8',
  create: () => textParser,
};
