/**
 * A table row as the text of a table element: its cells joined by " | ", as Markdown writes them.
 * A "|" inside a cell (`a \| b` in Markdown, `a | b` in an HTML cell) is written `\|`, so it does
 * not read as one more column, which would put the row's cells under the wrong header.
 */
export function tableRowText(cells: readonly string[]): string {
  return cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ');
}
