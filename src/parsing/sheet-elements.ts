/**
 * A workbook's sheets as elements (the `xlsx` and `ods` parsers): each sheet that holds anything is
 * a heading, its name, followed by its rows as table-row-elements.ts makes them, each with
 * `metadata.sheet`.
 */
import type { DocumentElement } from '../plugins.js';
import { tableRowElements } from './table-row-elements.js';

export interface SheetRows {
  name: string;
  /** Non-empty rows of cell texts, whitespace already collapsed. */
  rows: string[][];
}

export function sheetElements(sheets: readonly SheetRows[]): { elements: DocumentElement[]; sheetNames: string[]; rows: number } {
  const elements: DocumentElement[] = [];
  const sheetNames: string[] = [];
  let rows = 0;
  for (const sheet of sheets) {
    if (sheet.rows.length === 0) continue;
    const table = tableRowElements(sheet.rows, [sheet.name], { sheet: sheet.name });
    elements.push({ type: 'heading', level: 1, text: sheet.name, headingPath: [] }, ...table.elements);
    sheetNames.push(sheet.name);
    rows += table.rows;
  }
  return { elements, sheetNames, rows };
}
