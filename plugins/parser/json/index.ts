/**
 * The `json` parser: JSON documents and JSON Lines (NDJSON) logs and exports. Values are
 * flattened to "path: value" lines (`location.city: Oslo`, `staff[0].role: pilot`, an array of
 * plain values as `tags: coast, tower`), which read well to people, BM25 and embedding models
 * alike, unlike braces and quotes.
 *
 * One `paragraph` element per record: per line of a JSONL file (`metadata.line`), per item of a
 * top-level array (`metadata.index`), per key of a top-level object (`metadata.key`). A file is
 * JSON Lines when its name or type says so, or when it is not one JSON value but each of its
 * lines is.
 */
import path from 'node:path';
import type { DocumentElement, ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { decodeTextBuffer } from '../../../src/parsing/decode-text.js';
import { DocumentParseError, reasonOf } from '../../../src/parsing/document-parse-error.js';

const jsonLinesExtensions = new Set(['jsonl', 'ndjson']);
const jsonLinesTypes = new Set(['application/x-ndjson', 'application/jsonl', 'application/x-jsonlines', 'application/jsonlines']);

const isPlain = (value: unknown) => value === null || typeof value !== 'object';

/**
 * Deeper values fail the document with this reason: flattening recurses, and a file of 100,000
 * nested brackets failed with "Maximum call stack size exceeded". Real data stays far below it,
 * and each level's path is repeated on every line beneath it.
 */
const maxJsonDepth = 128;

/** Appends "path: value" lines for `value` at `path` ('' at the top). */
function flattenJson(value: unknown, at: string, lines: string[], depth = 0): void {
  const label = (text: string) => (at ? `${at}: ${text}` : text);
  if (depth > maxJsonDepth) throw new DocumentParseError('JSON', `values nested more than ${maxJsonDepth} levels deep are not supported (at ${at.slice(0, 80)}...)`);
  if (isPlain(value)) {
    lines.push(label(String(value)));
  } else if (Array.isArray(value)) {
    if (value.every(isPlain)) {
      if (value.length > 0) lines.push(label(value.map(String).join(', ')));
    } else value.forEach((item, index) => flattenJson(item, `${at}[${index}]`, lines, depth + 1));
  } else {
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) flattenJson(item, at ? `${at}.${key}` : key, lines, depth + 1);
  }
}

function recordElement(value: unknown, at: string, metadata: Record<string, unknown>): DocumentElement {
  const lines: string[] = [];
  flattenJson(value, at, lines);
  return { type: 'paragraph', text: lines.join('\n'), headingPath: [], metadata };
}

function jsonElements(value: unknown): DocumentElement[] {
  if (Array.isArray(value)) return value.map((item, index) => recordElement(item, '', { index }));
  if (!isPlain(value)) return Object.entries(value as Record<string, unknown>).map(([key, item]) => recordElement(item, key, { key }));
  return [recordElement(value, '', {})];
}

function jsonLinesElements(text: string): DocumentElement[] {
  const elements: DocumentElement[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim().length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new DocumentParseError(`JSONL line ${index + 1}`, `not valid JSON (${reasonOf(error)})`);
    }
    elements.push(recordElement(value, '', { line: index + 1 }));
  });
  return elements.filter((element) => element.text.length > 0);
}

function declaresJsonLines(input: ParserInput): boolean {
  return jsonLinesExtensions.has(path.extname(input.filename).slice(1).toLowerCase())
    || jsonLinesTypes.has(input.contentType.split(';')[0]!.trim().toLowerCase());
}

function parseJsonDocument(input: ParserInput): ParsedDocument {
  const text = decodeTextBuffer(input.data);
  if (text.trim().length === 0) return { elements: [] };
  if (declaresJsonLines(input)) return { elements: jsonLinesElements(text) };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const lines = text.split('\n').filter((line) => line.trim().length > 0);
    if (lines.length > 1 && /^\s*[[{]/.test(lines[0]!)) {
      try {
        JSON.parse(lines[0]!);
        return { elements: jsonLinesElements(text) };
      } catch {
        // Not JSON Lines either: the first error describes the file best.
      }
    }
    throw new DocumentParseError('JSON', `not valid JSON (${reasonOf(error)})`);
  }
  return { elements: jsonElements(value).filter((element) => element.text.length > 0) };
}

const jsonParser: Parser = {
  name: 'json',
  contentTypes: ['application/json', 'application/x-ndjson', 'application/jsonl', 'application/x-jsonlines', 'text/json'],
  extensions: ['json', 'jsonl', 'ndjson'],
  async parse(input: ParserInput): Promise<ParsedDocument> {
    return parseJsonDocument(input);
  },
};

export const jsonParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'json',
  description: 'JSON and JSON Lines: one element per record (line, array item or top-level key), flattened to "path: value" lines',
  create: () => jsonParser,
};
