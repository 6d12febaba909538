/**
 * The `ods` parser: OpenDocument spreadsheets (LibreOffice Calc, and what Google Sheets and Excel
 * export as .ods), read as Excel workbooks are: each sheet that holds anything is a heading (its
 * name) followed by its rows, each an element as CSV rows are (src/parsing/table-row-elements.ts:
 * "column: value" lines under a header row), with `metadata.sheet`. Cells are their stored values,
 * as the `xlsx` parser reads them: numbers without their display format (a percentage is its
 * fraction, an amount has no currency sign), dates as ISO dates, booleans as true or false; text
 * and times as written. Comments on cells are left out.
 *
 * Calc writes a sheet's unused area as rows and columns repeated thousands of times
 * (`number-rows-repeated`, `number-columns-repeated`): empty ones are skipped without being
 * materialised, and repeated content is written at most MAX_REPEATS times. content.xml is parsed
 * tag by tag (htmlparser2's Parser), not into a tree, so a large sheet is not held twice.
 *
 * The zip container is checked before anything is inflated (src/parsing/zip-inspection.ts). The
 * title and properties come from meta.xml; the sheets' names and the number of rows are metadata.
 */
import { Parser as XmlParser } from 'htmlparser2';
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { DocumentParseError } from '../../../src/parsing/document-parse-error.js';
import { collapseWhitespace } from '../../../src/parsing/document-properties.js';
import { OPEN_DOCUMENT_META_ENTRY, openDocumentProperties, openDocumentTitle } from '../../../src/parsing/open-document-meta.js';
import { sheetElements, type SheetRows } from '../../../src/parsing/sheet-elements.js';
import { inspectZipArchive, officeDocumentLimits } from '../../../src/parsing/zip-inspection.js';

export const ODS_CONTENT_TYPE = 'application/vnd.oasis.opendocument.spreadsheet';
const CONTENT_ENTRY = 'content.xml';
/** A row or cell repeated with content is written this many times at most. */
const MAX_REPEATS = 1000;
/** Columns past this are not read (Calc's sheets have 16,384; rows are not data that wide). */
const MAX_COLUMNS = 1024;

/** The value a cell stores, for the types whose text is only its display. */
function storedValue(attributes: Record<string, string>): string | undefined {
  switch (attributes['office:value-type']) {
    case 'float':
    case 'percentage':
    case 'currency':
      return attributes['office:value'];
    case 'date':
      return attributes['office:date-value'];
    case 'boolean':
      return attributes['office:boolean-value'];
    default:
      return undefined;
  }
}

function repeats(value: string | undefined): number {
  const count = Math.trunc(Number(value ?? 1));
  return Number.isFinite(count) && count > 0 ? count : 1;
}

/** The sheets of content.xml, each with its non-empty rows of cell texts. */
function readSheets(contentXml: string): { sheets: SheetRows[]; spreadsheet: boolean } {
  const sheets: SheetRows[] = [];
  let spreadsheet = false;
  let sheet: SheetRows | undefined;
  let row: { cells: string[]; repeat: number; emptyBefore: number } | undefined;
  let cell: { stored: string | undefined; repeat: number; paragraphs: string[]; text: string | undefined } | undefined;
  let annotationDepth = 0;
  const parser = new XmlParser({
    onopentag(name, attributes) {
      if (name === 'office:annotation') annotationDepth++;
      if (annotationDepth > 0) return;
      if (name === 'office:spreadsheet') spreadsheet = true;
      else if (name === 'table:table') sheet = { name: attributes['table:name'] ?? `Sheet ${sheets.length + 1}`, rows: [] };
      else if (name === 'table:table-row') row = { cells: [], repeat: repeats(attributes['table:number-rows-repeated']), emptyBefore: 0 };
      else if (name === 'table:table-cell' || name === 'table:covered-table-cell') {
        cell = { stored: storedValue(attributes), repeat: repeats(attributes['table:number-columns-repeated']), paragraphs: [], text: undefined };
      } else if (cell && name === 'text:p') cell.text = '';
      else if (cell?.text !== undefined && (name === 'text:s' || name === 'text:tab' || name === 'text:line-break')) cell.text += ' ';
    },
    ontext(text) {
      if (annotationDepth === 0 && cell?.text !== undefined) cell.text += text;
    },
    onclosetag(name) {
      if (name === 'office:annotation') {
        annotationDepth--;
        return;
      }
      if (annotationDepth > 0) return;
      if (name === 'text:p' && cell?.text !== undefined) {
        cell.paragraphs.push(cell.text);
        cell.text = undefined;
      } else if ((name === 'table:table-cell' || name === 'table:covered-table-cell') && cell && row) {
        const value = collapseWhitespace(cell.stored ?? cell.paragraphs.join(' '));
        if (value.length === 0) {
          // Empty cells count only when a value follows them in the row: trailing ones are the sheet's unused area.
          row.emptyBefore += cell.repeat;
        } else {
          const free = MAX_COLUMNS - row.cells.length;
          row.cells.push(...Array<string>(Math.min(row.emptyBefore, free)).fill(''));
          row.cells.push(...Array<string>(Math.max(0, Math.min(cell.repeat, MAX_REPEATS, MAX_COLUMNS - row.cells.length))).fill(value));
          row.emptyBefore = 0;
        }
        cell = undefined;
      } else if (name === 'table:table-row' && row && sheet) {
        if (row.cells.length > 0) for (let copy = 0; copy < Math.min(row.repeat, MAX_REPEATS); copy++) sheet.rows.push(row.cells);
        row = undefined;
      } else if (name === 'table:table' && sheet) {
        sheets.push(sheet);
        sheet = undefined;
      }
    },
  }, { xmlMode: true });
  parser.end(contentXml);
  return { sheets, spreadsheet };
}

async function parseOds(data: Buffer): Promise<ParsedDocument> {
  if (data.length === 0) throw new DocumentParseError('ODS', 'the file is empty');
  const parts = await inspectZipArchive(data, 'ODS', officeDocumentLimits, (name) => name === CONTENT_ENTRY || name === OPEN_DOCUMENT_META_ENTRY);
  const contentXml = parts.get(CONTENT_ENTRY)?.toString('utf8');
  if (contentXml === undefined) throw new DocumentParseError('ODS', 'the archive holds no sheets (content.xml)');
  const { sheets, spreadsheet } = readSheets(contentXml);
  if (!spreadsheet) throw new DocumentParseError('ODS', 'content.xml holds no spreadsheet (office:spreadsheet): not a spreadsheet');
  const { elements, sheetNames, rows } = sheetElements(sheets);
  const metaXml = parts.get(OPEN_DOCUMENT_META_ENTRY)?.toString('utf8');
  const title = openDocumentTitle(metaXml);
  return { elements, ...(title !== undefined ? { title } : {}), metadata: { ...openDocumentProperties(metaXml), sheets: sheetNames, rows } };
}

const odsParser: Parser = {
  name: 'ods',
  contentTypes: [ODS_CONTENT_TYPE],
  extensions: ['ods'],
  parse(input: ParserInput): Promise<ParsedDocument> {
    return parseOds(input.data);
  },
};

export const odsParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'ods',
  description: 'OpenDocument spreadsheets (.ods): a heading per sheet, one element per row as "column: value" lines, cells by their stored values; zip bombs and damaged archives refused before decompression',
  create: () => odsParser,
};
