/**
 * The rows of a table file (CSV, a spreadsheet's sheet) as elements: each row is one `table`
 * element whose text pairs every value with its column ("city: Oslo" lines), so a chunk holding
 * rows 4,000-4,010 still says what its numbers are. The header row is each element's
 * `metadata.columns`, and `metadata.row` the row's 1-based number below the header. The first row
 * is the header when its cells are non-empty, distinct and not numbers; otherwise rows read as
 * "a | b | c".
 */
import type { DocumentElement } from '../plugins.js';
import { tableRowText } from './table-row-text.js';

function looksLikeHeader(cells: string[]): boolean {
  const names = cells.map((cell) => cell.toLowerCase());
  return cells.every((cell) => cell.length > 0 && !/^[-+]?[\d.,]+%?$/.test(cell)) && new Set(names).size === names.length;
}

function rowText(cells: string[], columns: string[] | undefined): string {
  if (!columns) return tableRowText(cells.filter((cell) => cell.length > 0));
  return cells
    .map((cell, index) => (cell.length > 0 ? `${columns[index] ?? `column ${index + 1}`}: ${cell}` : ''))
    .filter((pair) => pair.length > 0)
    .join('\n');
}

export interface TableRowElements {
  elements: DocumentElement[];
  /** The header row, when the first row is one. */
  columns: string[] | undefined;
  /** Rows below the header. */
  rows: number;
}

/** `rows`: non-empty rows of cell texts, whitespace already collapsed; `metadata` goes on every element. */
export function tableRowElements(rows: string[][], headingPath: string[], metadata: Record<string, unknown> = {}): TableRowElements {
  const columns = rows.length > 1 && looksLikeHeader(rows[0]!) ? rows[0]! : undefined;
  const body = columns ? rows.slice(1) : rows;
  const elements = body.map((cells, index): DocumentElement => ({
    type: 'table',
    text: rowText(cells, columns),
    headingPath,
    metadata: { ...metadata, row: index + 1, ...(columns ? { columns } : {}) },
  }));
  return { elements, columns, rows: body.length };
}
