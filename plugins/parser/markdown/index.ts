/**
 * The `markdown` parser: walks `marked`'s token stream (GFM) into elements. Inline formatting is
 * reduced to plain text (link text without the URL, image alt text, code spans verbatim), so the
 * keyword index and embeddings see words, not markup.
 *
 * heading → `heading` (level = depth; pictures count only in a heading with no words of its own,
 * so README badges stay out of titles and heading paths); paragraph, blockquote → `paragraph` (a
 * heading inside a quote, such as "> ## Note", stays a line of the quote: it heads a callout, not a
 * section of the document); raw HTML → the elements the `html` parser would make of it
 * (html-blocks.ts), so `<h1>` is a heading; list → one `list` element, items on their own lines
 * ("- item", "3. item" for ordered lists so step numbers survive, nested items indented two spaces
 * per level, an item's further paragraphs and its code blocks on lines of their own, code fenced as
 * in the source); table → `table`, one "a | b | c" line per row, header first; fenced or indented
 * code → `code` (metadata.language).
 * The title is a `title` in the front matter, else the first heading when it is an h1: a
 * changelog's "# v2.0.0" two hundred lines down does not name the file.
 */
import { marked, type Token, type Tokens } from 'marked';
import type { DocumentElement, ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { decodeTextBuffer } from '../../../src/parsing/decode-text.js';
import { HeadingTrail } from '../../../src/parsing/heading-trail.js';
import { decodeCharacterReferences } from './character-references.js';
import { splitFrontMatter } from './front-matter.js';
import { htmlBlockElements } from './html-blocks.js';
import { assertMarkdownNesting } from './nesting-depth.js';
import { tableRowText } from '../../../src/parsing/table-row-text.js';

/** A token's own text, for token types without children. */
function ownText(token: Token): string {
  return 'text' in token && typeof token.text === 'string' ? decodeCharacterReferences(token.text) : '';
}

/** Plain text of inline tokens; `images: false` leaves out the alt text of pictures. */
function inlineText(tokens: readonly Token[] | undefined, options: { images?: boolean } = {}): string {
  if (!tokens) return '';
  let text = '';
  for (const token of tokens) {
    switch (token.type) {
      case 'text':
        // A soft line break is a space in Markdown; hard-wrapped prose must not reach the
        // chunker as lines (it splits on "\n" before sentences).
        text += token.tokens ? inlineText(token.tokens, options) : decodeCharacterReferences(token.text).replace(/[ \t]*\n[ \t]*/g, ' ');
        break;
      case 'escape':
      case 'codespan':
        text += token.text;
        break;
      case 'image':
        if (options.images !== false) text += decodeCharacterReferences(token.text);
        break;
      case 'br':
        text += '\n';
        break;
      case 'html':
      case 'checkbox':
        break;
      default:
        text += 'tokens' in token && token.tokens ? inlineText(token.tokens, options) : ownText(token);
    }
  }
  return text;
}

/**
 * A heading's text, on one line. Its pictures count only when it has no words of its own (a logo
 * heading): READMEs put badges in the h1, and "# ssri [![npm version](…)](…) [![license](…)](…)"
 * made the title "ssri npm version license Travis AppVeyor Coverage Status".
 */
function headingText(tokens: readonly Token[] | undefined): string {
  const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();
  return oneLine(inlineText(tokens, { images: false })) || oneLine(inlineText(tokens));
}

/** Plain text of a raw HTML block nested in a list item or blockquote. */
function htmlBlockText(html: string): string {
  return htmlBlockElements(html).map((element) => element.text).join('\n');
}

/**
 * The lines of a list, each item's content after its marker and continued two spaces in, so a
 * nested list is indented two spaces per level. An item's blocks keep their own lines: joining
 * them with spaces ran a code example into the prose around it ("For example: widget({ … }) Use
 * with care.").
 */
function listLines(list: Tokens.List): string[] {
  const first = typeof list.start === 'number' ? list.start : 1;
  return list.items.flatMap((item, position) => {
    const marker = list.ordered ? `${first + position}. ` : '- ';
    const checkbox = item.task ? (item.checked ? '[x] ' : '[ ] ') : '';
    const [lead = '', ...rest] = item.tokens.flatMap(listItemBlockLines);
    return [`${marker}${checkbox}${lead}`, ...rest.map((line) => (line.length > 0 ? `  ${line}` : line))];
  });
}

/** The lines of one block of a list item; code as written in the source, fence and all, so it reads as code. */
function listItemBlockLines(token: Token): string[] {
  if (token.type === 'list') return listLines(token as Tokens.List);
  if (token.type === 'code') return token.raw.replace(/\n+$/, '').split('\n');
  const text = blockText(token);
  return text.length > 0 ? text.split('\n') : [];
}

function tableLines(table: Tokens.Table): string[] {
  const row = (cells: Tokens.TableCell[]): string => tableRowText(cells.map((cell) => inlineText(cell.tokens).trim()));
  return [row(table.header), ...table.rows.map(row)];
}

/** Plain text of a block token nested inside a list item or blockquote. */
function blockText(token: Token): string {
  switch (token.type) {
    case 'list':
      return listLines(token as Tokens.List).join('\n');
    case 'table':
      return tableLines(token as Tokens.Table).join('\n');
    case 'code':
      return token.text;
    case 'blockquote':
      return (token.tokens ?? []).map(blockText).filter((text: string) => text.length > 0).join('\n');
    case 'html':
      return htmlBlockText(token.text);
    case 'space':
    case 'hr':
    case 'def':
    case 'checkbox':
      return '';
    default:
      return ('tokens' in token && token.tokens ? inlineText(token.tokens) : ownText(token)).trim();
  }
}

/** MDX module lines ("import X from 'y'", "export const a = 1") are code, not prose. */
function isMdxModuleParagraph(raw: string): boolean {
  return raw
    .trim()
    .split('\n')
    .every((line) => /^(import|export)\s/.test(line.trim()));
}

export function parseMarkdown(markdown: string, options: { mdx?: boolean } = {}): ParsedDocument {
  const { body, metadata } = splitFrontMatter(markdown);
  assertMarkdownNesting(body);
  const trail = new HeadingTrail();
  const elements: DocumentElement[] = [];

  const addElement = (type: DocumentElement['type'], text: string, extra: Partial<DocumentElement> = {}): void => {
    if (text.trim().length > 0) elements.push({ type, text, headingPath: trail.path, ...extra });
  };
  const addHeading = (level: number, text: string): void => {
    if (text.length > 0) elements.push({ type: 'heading', text, level, headingPath: trail.enter(level, text) });
  };

  for (const token of marked.lexer(body, { gfm: true })) {
    switch (token.type) {
      case 'heading':
        addHeading((token as Tokens.Heading).depth, headingText(token.tokens));
        break;
      case 'paragraph':
        if (options.mdx && isMdxModuleParagraph(token.raw)) break;
        addElement('paragraph', inlineText(token.tokens).trim());
        break;
      case 'text':
      case 'blockquote':
        addElement('paragraph', blockText(token));
        break;
      case 'html':
        for (const element of htmlBlockElements(token.text)) {
          if (element.type === 'heading') addHeading(element.level ?? 1, element.text);
          else addElement(element.type, element.text, { ...(element.metadata ? { metadata: element.metadata } : {}), ...(element.tableHeader ? { tableHeader: element.tableHeader } : {}) });
        }
        break;
      case 'list':
        addElement('list', listLines(token as Tokens.List).join('\n'));
        break;
      case 'table': {
        const lines = tableLines(token as Tokens.Table);
        addElement('table', lines.join('\n'), { tableHeader: lines[0] });
        break;
      }
      case 'code': {
        const language = (token as Tokens.Code).lang?.trim().split(/\s+/)[0];
        addElement('code', token.text, language ? { metadata: { language } } : {});
        break;
      }
      default:
        // space, hr, def: no content of their own.
        break;
    }
  }

  const firstHeading = elements.find((element) => element.type === 'heading');
  const title = typeof metadata.title === 'string' ? metadata.title : firstHeading?.level === 1 ? firstHeading.text : undefined;
  return {
    elements,
    ...(title !== undefined ? { title } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
}

const markdownParser: Parser = {
  name: 'markdown',
  contentTypes: ['text/markdown', 'text/x-markdown'],
  extensions: ['md', 'markdown', 'mdx'],
  async parse(input: ParserInput): Promise<ParsedDocument> {
    const mdx = input.filename.toLowerCase().endsWith('.mdx');
    return parseMarkdown(decodeTextBuffer(input.data), { mdx });
  },
};

export const markdownParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'markdown',
  description: 'Markdown (GFM) via marked: headings, paragraphs, lists, tables, code; raw HTML blocks read as HTML (htmlparser2); front matter skipped, its title naming the document',
  create: () => markdownParser,
};
