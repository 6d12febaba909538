/**
 * The `csv` parser: comma-, semicolon-, pipe- or tab-separated tables through csv-parse, each row
 * an element as src/parsing/table-row-elements.ts makes them.
 *
 * The delimiter is a tab for .tsv/.tab files and text/tab-separated-values, else the candidate
 * that splits the first lines into the same number of fields (outside quotes), most fields first.
 * Quoted fields may span lines; rows may have more or fewer fields than the header (spreadsheets
 * export ragged rows).
 */
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { decodeTextBuffer } from '../../../src/parsing/decode-text.js';
import { DocumentParseError, reasonOf } from '../../../src/parsing/document-parse-error.js';
import { tableRowElements } from '../../../src/parsing/table-row-elements.js';

const candidates = [',', ';', '|', '\t'] as const;
const SAMPLE_CHARACTERS = 64 * 1024;
const SAMPLE_LINES = 20;

function isTabSeparated(input: ParserInput): boolean {
  const extension = path.extname(input.filename).slice(1).toLowerCase();
  return extension === 'tsv' || extension === 'tab' || input.contentType.split(';')[0]!.trim().toLowerCase() === 'text/tab-separated-values';
}

/** The delimiter that cuts the sample's lines into equally many fields, preferring more fields. */
function detectDelimiter(text: string): string {
  const unquoted = text.slice(0, SAMPLE_CHARACTERS).replace(/"(?:[^"]|"")*"/g, '""');
  const lines = unquoted.split('\n');
  if (text.length > SAMPLE_CHARACTERS) lines.pop();
  const sample = lines.filter((line) => line.trim().length > 0).slice(0, SAMPLE_LINES);
  let best: { delimiter: string; fields: number } = { delimiter: ',', fields: 0 };
  for (const delimiter of candidates) {
    const counts = sample.map((line) => line.split(delimiter).length - 1);
    const consistent = counts.length > 0 && counts.every((count) => count === counts[0]);
    if (consistent && counts[0]! > best.fields) best = { delimiter, fields: counts[0]! };
  }
  return best.delimiter;
}

function readRows(text: string, delimiter: string): string[][] {
  try {
    return parseCsv(text, { delimiter, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, trim: true }) as string[][];
  } catch (error) {
    const line = (error as { lines?: number }).lines;
    throw new DocumentParseError(line ? `CSV line ${line}` : 'CSV', reasonOf(error));
  }
}

function parseTable(input: ParserInput): ParsedDocument {
  const text = decodeTextBuffer(input.data);
  const delimiter = isTabSeparated(input) ? '\t' : detectDelimiter(text);
  // A quoted value spanning lines reads as one line: each value sits on its "column: value" line.
  const rows = readRows(text, delimiter)
    .map((cells) => cells.map((cell) => cell.replace(/\s+/g, ' ')))
    .filter((cells) => cells.some((cell) => cell.length > 0));
  const table = tableRowElements(rows, []);
  return { elements: table.elements, metadata: { delimiter, rows: table.rows, ...(table.columns ? { columns: table.columns } : {}) } };
}

const csvParser: Parser = {
  name: 'csv',
  contentTypes: ['text/csv', 'text/tab-separated-values', 'application/csv'],
  extensions: ['csv', 'tsv', 'tab'],
  async parse(input: ParserInput): Promise<ParsedDocument> {
    return parseTable(input);
  },
};

export const csvParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'csv',
  description: 'CSV and TSV via csv-parse: one element per row as "column: value" lines, header and delimiter detected',
  create: () => csvParser,
};
