import { DocumentParseError } from '../../../src/parsing/document-parse-error.js';

/** Deeper than any document people write; the cost of a level stays linear up to here. */
export const MAX_MARKDOWN_NESTING = 64;

const FENCE = /^[ \t]*(`{3,}|~{3,})/;

/** Columns of leading whitespace, a tab advancing to the next multiple of 4 as CommonMark counts. */
function indentColumns(line: string): number {
  let columns = 0;
  for (const character of line) {
    if (character === ' ') columns += 1;
    else if (character === '\t') columns += 4 - (columns % 4);
    else break;
  }
  return columns;
}

/** Block quote markers at the start of a line (`> > >`). */
function quoteDepth(line: string): number {
  let depth = 0;
  for (let index = 0; index < line.length; index++) {
    const character = line[index];
    if (character === '>') depth++;
    else if (character !== ' ' && character !== '\t') break;
  }
  return depth;
}

/**
 * Refuses Markdown nested more than MAX_MARKDOWN_NESTING levels, before `marked` sees it: it
 * re-reads a list item's whole content for every level, so time and memory grow with depth times
 * size (a 9 MB list 3,000 levels deep took 4.5 GB and never finished; 5,000 nested quotes overflow
 * the stack). Every list level indents its items by at least two columns, so a line indented by
 * twice the limit, outside fenced code, is nested deeper than it.
 */
export function assertMarkdownNesting(markdown: string): void {
  let fence: string | undefined;
  let lineNumber = 0;
  for (const line of markdown.split('\n')) {
    lineNumber++;
    const opening = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (opening !== undefined && opening[0] === fence[0] && opening.length >= fence.length) fence = undefined;
      continue;
    }
    if (opening !== undefined) {
      fence = opening;
      continue;
    }
    if (indentColumns(line) >= 2 * MAX_MARKDOWN_NESTING || quoteDepth(line) > MAX_MARKDOWN_NESTING) {
      throw new DocumentParseError(`Markdown line ${lineNumber}`, `lists or block quotes nested more than ${MAX_MARKDOWN_NESTING} levels deep are not supported`);
    }
  }
}
