/**
 * PDF text runs → lines → blocks → elements. A PDF has no paragraphs or headings, only glyph runs
 * placed on a page; the structure is guessed from geometry:
 *
 * - Runs on one baseline form a line (a run ending in hasEOL, or a baseline jump of half the font
 *   size, starts a new one); a gap wider than a fifth of the font size between two runs is a space.
 * - Consecutive lines of one font size, less than 1.6 line heights apart, form a block
 *   (paragraph); a size change, a wider gap or a jump back up the page (a new column) starts a new
 *   block. A word hyphenated across lines is joined.
 * - The body size is the size that carries the most characters in the document. A block of at
 *   most 3 lines and 200 characters set at least 15% larger than the body is a heading; heading
 *   levels follow the distinct heading sizes, largest first (at most 6).
 * - Running heads and feet: a line in the top or bottom 8% of the page that recurs there on at
 *   least half of the pages (documents of 3+ pages), or a bare page number there, is dropped, so
 *   "Annual report 2024 · page 7" does not end up in every chunk. Below the heading size a line
 *   recurs when its text does with digits ignored; at a heading size only when its very text and
 *   size do, so "Chapter 2 Lamp Maintenance" atop page 2 stays a heading (see runningKey).
 */
import type { DocumentElement } from '../../../src/plugins.js';
import { HeadingTrail } from '../../../src/parsing/heading-trail.js';

/** A text run as pdfjs reports it (the fields used here). */
export interface TextRun {
  str: string;
  /** [a, b, c, d, x, y]: font size is the length of (c, d); (x, y) the baseline origin. */
  transform: number[];
  width: number;
  hasEOL: boolean;
}

export interface PageText {
  page: number;
  /** Page height in PDF units, for the running head/foot margins. */
  height: number;
  runs: TextRun[];
}

export interface TextLine {
  page: number;
  text: string;
  size: number;
  /** Baseline height from the bottom of the page. */
  y: number;
  pageHeight: number;
}

interface TextBlock {
  page: number;
  size: number;
  lines: string[];
}

const HEADING_SIZE_FACTOR = 1.15;
const HEADING_MAX_LINES = 3;
const HEADING_MAX_CHARACTERS = 200;
const PARAGRAPH_GAP_FACTOR = 1.6;
const MARGIN_SHARE = 0.08;

const fontSize = (run: TextRun) => Math.hypot(run.transform[2] ?? 0, run.transform[3] ?? 0) || Math.abs(run.transform[0] ?? 0);
const roundSize = (size: number) => Math.round(size * 2) / 2;

/** Groups a page's runs into lines. */
export function pageLines(page: PageText): TextLine[] {
  const lines: TextLine[] = [];
  let current: (TextLine & { endX: number }) | undefined;
  let breakBefore = false;
  for (const run of page.runs) {
    const size = fontSize(run);
    const x = run.transform[4] ?? 0;
    const y = run.transform[5] ?? 0;
    if (run.str.length > 0) {
      if (!current || breakBefore || Math.abs(y - current.y) > Math.max(size, current.size) * 0.5) {
        if (current) lines.push(current);
        current = { page: page.page, text: '', size, y, pageHeight: page.height, endX: x };
      }
      const gap = x - current.endX;
      const needsSpace = current.text.length > 0 && gap > size * 0.2 && !/\s$/.test(current.text) && !/^\s/.test(run.str);
      current.text += (needsSpace ? ' ' : '') + run.str;
      current.size = Math.max(current.size, size);
      current.endX = x + run.width;
    }
    breakBefore = run.hasEOL;
  }
  if (current) lines.push(current);
  return lines
    .map((line) => ({ page: line.page, text: line.text.replace(/\s+/g, ' ').trim(), size: roundSize(line.size), y: line.y, pageHeight: line.pageHeight }))
    .filter((line) => line.text.length > 0);
}

const inMargin = (line: TextLine) => line.y > line.pageHeight * (1 - MARGIN_SHARE) || line.y < line.pageHeight * MARGIN_SHARE;
const atHeadingSize = (size: number, body: number) => size >= body * HEADING_SIZE_FACTOR;

/** "7", "Page 7", "Page 7 of 10", "7/10", "- 7 -"; front matter is numbered in roman numerals (i, ii, xiv). */
const pageNumber = /^(?:page\s*|[-–—]\s*)?(?:\d{1,4}|[ivxlc]{1,7})(?:\s*(?:of|\/)\s*\d{1,4})?(?:\s*[-–—])?$/i;

/**
 * What a running line keeps from page to page. A head or foot repeats with a changing number
 * ("Annual report 2024 · page 7", "Chapter 3 · Lamps" on every page of chapter 3), so below the
 * heading size digits are ignored. At a heading size the number is no evidence: chapter N often
 * starts page N, and "Annual Report 2021, 2022, 2023" atop pages 1-3 follow the page numbers as
 * closely as a printed page label does, so only the same text at the same size (a title repeated
 * in the header) recurs; the title atop page 1 is not the small running head repeating it.
 */
function runningKey(line: TextLine, body: number): string {
  const text = line.text.toLowerCase();
  return atHeadingSize(line.size, body) ? `${line.size}pt ${text}` : text.replace(/\d+/g, '#');
}

/** Drops running heads, running feet and page numbers. */
export function withoutRunningLines(lines: TextLine[], pageCount: number): TextLine[] {
  // Running lines are a line or two a page: the body size is the one linesToElements will find.
  const body = bodySize(lines);
  const pagesByKey = new Map<string, Set<number>>();
  for (const line of lines) {
    if (!inMargin(line)) continue;
    const key = runningKey(line, body);
    pagesByKey.set(key, (pagesByKey.get(key) ?? new Set()).add(line.page));
  }
  return lines.filter((line) => {
    if (!inMargin(line)) return true;
    if (pageNumber.test(line.text)) return false;
    return !(pageCount >= 3 && (pagesByKey.get(runningKey(line, body))?.size ?? 0) >= pageCount / 2);
  });
}

function joinLines(lines: string[]): string {
  let text = '';
  for (const line of lines) {
    // "inter-" + "national" → "international"; a hyphen before a capital or digit stays.
    if (/\p{L}-$/u.test(text) && /^\p{Ll}/u.test(line)) text = text.slice(0, -1) + line;
    else text = text ? `${text} ${line}` : line;
  }
  return text;
}

function toBlocks(lines: TextLine[]): TextBlock[] {
  const blocks: TextBlock[] = [];
  let previous: TextLine | undefined;
  for (const line of lines) {
    const block = blocks[blocks.length - 1];
    const gap = previous ? previous.y - line.y : 0;
    const continues = block && previous && previous.page === line.page && line.size === block.size
      && gap > 0 && gap <= line.size * PARAGRAPH_GAP_FACTOR;
    if (continues) block.lines.push(line.text);
    else blocks.push({ page: line.page, size: line.size, lines: [line.text] });
    previous = line;
  }
  return blocks;
}

/** The font size carrying the most characters. */
function bodySize(lines: TextLine[]): number {
  const characters = new Map<number, number>();
  for (const line of lines) characters.set(line.size, (characters.get(line.size) ?? 0) + line.text.length);
  let best = 0;
  let bestCount = -1;
  for (const [size, count] of characters) {
    if (count > bestCount) [best, bestCount] = [size, count];
  }
  return best;
}

/** A table-of-contents or index entry: dot leaders, then a page number ("2 Naming . . . . . 6"). */
const contentsEntry = /(?:\.\s*){4,}(?:\d{1,4}|[ivxlc]{1,7})$/i;

function isHeadingBlock(block: TextBlock, body: number): boolean {
  const length = block.lines.reduce((sum, line) => sum + line.length, 0);
  // Contents pages are often set in the headings' size; their entries are not the sections.
  return atHeadingSize(block.size, body) && block.lines.length <= HEADING_MAX_LINES
    && length <= HEADING_MAX_CHARACTERS && /\p{L}/u.test(block.lines.join('')) && !block.lines.some((line) => contentsEntry.test(line));
}

/** The elements of the whole document's lines, in reading order, each with its page. */
export function linesToElements(lines: TextLine[]): DocumentElement[] {
  const blocks = toBlocks(lines);
  const body = bodySize(lines);
  const headingSizes = [...new Set(blocks.filter((block) => isHeadingBlock(block, body)).map((block) => block.size))].sort((a, b) => b - a);
  const trail = new HeadingTrail();
  return blocks.map((block): DocumentElement => {
    const text = joinLines(block.lines);
    if (isHeadingBlock(block, body)) {
      const level = Math.min(headingSizes.indexOf(block.size) + 1, 6);
      return { type: 'heading', text, level, page: block.page, headingPath: trail.enter(level, text) };
    }
    return { type: 'paragraph', text, page: block.page, headingPath: trail.path };
  });
}
