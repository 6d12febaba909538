/**
 * The `markdown` parser: walks `marked`'s token stream (GFM) into elements. Inline formatting is
 * reduced to plain text (link text without the URL, image alt text, code spans verbatim), so the
 * keyword index and embeddings see words, not markup.
 *
 * heading → `heading` (level = depth); paragraph, blockquote, raw HTML with text → `paragraph`;
 * list → one `list` element, items on their own lines ("- item", "3. item" for ordered lists so
 * step numbers survive, nested items indented two spaces per level); table → `table`, one
 * "a | b | c" line per row, header first; fenced or indented code → `code` (metadata.language).
 * The title is the first h1, else a `title` in the front matter.
 */
import { marked, type Token, type Tokens } from 'marked';
import type { DocumentElement, ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { decodeTextBuffer } from '../../../src/parsing/decode-text.js';
import { HeadingTrail } from '../../../src/parsing/heading-trail.js';
import { decodeCharacterReferences } from './character-references.js';
import { splitFrontMatter } from './front-matter.js';
import { assertMarkdownNesting } from './nesting-depth.js';

function stripHtmlTags(html: string): string {
  return decodeCharacterReferences(html.replace(/<!--[\s\S]*?-->/g, '').replace(/<[^>]*>/g, ' '))
    .replace(/[ \t]+/g, ' ')
    .trim();
}

/** A token's own text, for token types without children. */
function ownText(token: Token): string {
  return 'text' in token && typeof token.text === 'string' ? decodeCharacterReferences(token.text) : '';
}

/** Plain text of inline tokens. */
function inlineText(tokens: readonly Token[] | undefined): string {
  if (!tokens) return '';
  let text = '';
  for (const token of tokens) {
    switch (token.type) {
      case 'text':
        // A soft line break is a space in Markdown; hard-wrapped prose must not reach the
        // chunker as lines (it splits on "\n" before sentences).
        text += token.tokens ? inlineText(token.tokens) : decodeCharacterReferences(token.text).replace(/[ \t]*\n[ \t]*/g, ' ');
        break;
      case 'escape':
      case 'codespan':
        text += token.text;
        break;
      case 'image':
        text += token.text;
        break;
      case 'br':
        text += '\n';
        break;
      case 'html':
      case 'checkbox':
        break;
      default:
        text += 'tokens' in token && token.tokens ? inlineText(token.tokens) : ownText(token);
    }
  }
  return text;
}

function listLines(list: Tokens.List, depth = 0): string[] {
  const first = typeof list.start === 'number' ? list.start : 1;
  const indent = '  '.repeat(depth);
  return list.items.flatMap((item, position) => {
    const marker = list.ordered ? `${first + position}. ` : '- ';
    const checkbox = item.task ? (item.checked ? '[x] ' : '[ ] ') : '';
    const ownText: string[] = [];
    const nested: string[] = [];
    for (const token of item.tokens) {
      if (token.type === 'list') nested.push(...listLines(token as Tokens.List, depth + 1));
      else ownText.push(blockText(token));
    }
    const text = ownText.filter((part) => part.length > 0).join(' ');
    return [`${indent}${marker}${checkbox}${text}`, ...nested];
  });
}

function tableLines(table: Tokens.Table): string[] {
  const row = (cells: Tokens.TableCell[]): string => cells.map((cell) => inlineText(cell.tokens).trim()).join(' | ');
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
      return stripHtmlTags(token.text);
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
  let title: string | undefined;

  const addElement = (type: DocumentElement['type'], text: string, extra: Partial<DocumentElement> = {}): void => {
    if (text.trim().length > 0) elements.push({ type, text, headingPath: trail.path, ...extra });
  };

  for (const token of marked.lexer(body, { gfm: true })) {
    switch (token.type) {
      case 'heading': {
        const text = inlineText(token.tokens).trim();
        if (text.length === 0) break;
        const level = (token as Tokens.Heading).depth;
        if (level === 1) title ??= text;
        elements.push({ type: 'heading', text, level, headingPath: trail.enter(level, text) });
        break;
      }
      case 'paragraph':
        if (options.mdx && isMdxModuleParagraph(token.raw)) break;
        addElement('paragraph', inlineText(token.tokens).trim());
        break;
      case 'text':
      case 'blockquote':
        addElement('paragraph', blockText(token));
        break;
      case 'html':
        addElement('paragraph', stripHtmlTags(token.text));
        break;
      case 'list':
        addElement('list', listLines(token as Tokens.List).join('\n'));
        break;
      case 'table':
        addElement('table', tableLines(token as Tokens.Table).join('\n'));
        break;
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

  title ??= typeof metadata.title === 'string' ? metadata.title : undefined;
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
  description: 'Markdown (GFM) via marked: headings, paragraphs, lists, tables, code; front matter scalars as metadata',
  create: () => markdownParser,
};
