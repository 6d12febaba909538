/**
 * The `xlsx` parser: Excel workbooks through read-excel-file. Each sheet that holds anything is a
 * heading (its name) followed by its rows, each an element as CSV rows are (src/parsing/
 * table-row-elements.ts: "column: value" lines under a header row), with `metadata.sheet`. Cells
 * are read by their stored values: formulas by their last computed value, dates as ISO dates
 * (`2026-03-01`, with the time when there is one), numbers without their display format (a
 * percentage is its fraction, 0.25; an amount has no currency sign).
 *
 * The zip container is checked before anything is inflated (src/parsing/zip-inspection.ts).
 * The title is the workbook's own (docProps/core.xml dc:title); the other core properties, the
 * sheets' names and the number of rows are source metadata.
 */
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { DocumentParseError, reasonOf } from '../../../src/parsing/document-parse-error.js';
import { collapseWhitespace } from '../../../src/parsing/document-properties.js';
import { CORE_PROPERTIES_ENTRY, coreProperties, coreProperty } from '../../../src/parsing/office-core-properties.js';
import { sheetElements } from '../../../src/parsing/sheet-elements.js';
import { inspectZipArchive, officeDocumentLimits } from '../../../src/parsing/zip-inspection.js';

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) {
    if (!Number.isFinite(value.getTime())) return '';
    const iso = value.toISOString();
    return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso.replace(/\.000Z$/, 'Z');
  }
  return collapseWhitespace(String(value));
}

async function parseXlsx(data: Buffer): Promise<ParsedDocument> {
  if (data.length === 0) throw new DocumentParseError('XLSX', 'the file is empty');
  const kept = await inspectZipArchive(data, 'XLSX', officeDocumentLimits, (name) => name === CORE_PROPERTIES_ENTRY);
  const { default: readXlsxFile } = await import('read-excel-file/node');
  let sheets: Awaited<ReturnType<typeof readXlsxFile>>;
  try {
    sheets = await readXlsxFile(data);
  } catch (error) {
    throw new DocumentParseError('XLSX content', reasonOf(error));
  }
  const { elements, sheetNames, rows } = sheetElements(sheets.map(({ sheet, data }) => ({
    name: sheet,
    rows: data.map((row) => row.map(cellText)).filter((row) => row.some((cell) => cell.length > 0)),
  })));
  const coreXml = kept.get(CORE_PROPERTIES_ENTRY)?.toString('utf8');
  const title = coreProperty(coreXml, 'dc:title');
  return {
    elements,
    ...(title !== undefined ? { title } : {}),
    metadata: { ...coreProperties(coreXml), sheets: sheetNames, rows },
  };
}

const xlsxParser: Parser = {
  name: 'xlsx',
  contentTypes: ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  extensions: ['xlsx'],
  parse(input: ParserInput): Promise<ParsedDocument> {
    return parseXlsx(input.data);
  },
};

export const xlsxParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'xlsx',
  description: 'Excel (.xlsx) via read-excel-file: a heading per sheet, one element per row as "column: value" lines; zip bombs and damaged archives refused before decompression',
  create: () => xlsxParser,
};
