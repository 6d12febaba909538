/**
 * Cuts a parsed document's elements into chunks of at most `chunkSize` characters (UTF-16 code
 * units, i.e. `string.length`).
 *
 * Every chunk's text is an exact slice of the document text, `joinElementTexts(elements)` (element
 * texts joined by a blank line), starting at `charStart`; the words between two elements of one
 * chunk are separated as in that text, and nothing (no heading path) is prepended. A chunk that
 * continues a table names the table's header row beside its text (`tableHeader`).
 *
 * Shared rules of both strategies:
 * - Elements whose text is blank (page breaks, empty images) are skipped.
 * - Sections: a chunk never runs across a top-level heading (title, h1, h2) once it holds
 *   non-heading content, and no overlap is carried across one. "# Guide" followed directly by
 *   "## Install" stays in one chunk: a chunk made of a lone heading would retrieve nothing.
 * - A chunk never ends with a heading when the heading's content can start the next chunk.
 * - An element that fits in `chunkSize` is never cut (tables and code blocks included); one that
 *   does not is split recursively on ["\n\n", "\n", ". ", " ", ""] (LangChain's separators).
 * - headingPath is the section path holding most of the chunk's characters, an element's path being
 *   its headingPath plus the element itself when it is a heading (a chunk opening with "## Install"
 *   is about Install). A chunk that opens with the tail of one subsection (or its overlap) and goes
 *   on into the next is about the next: the first element's path mislabelled such chunks.
 *
 * `recursive` packs the pieces greedily and starts each chunk with up to `chunkOverlap` characters
 * of the previous one, cut at a sentence start if the window holds one, else at a word start. `paragraph` packs whole elements, overlaps by the
 * trailing whole element(s) of the previous chunk that fit in `chunkOverlap`, and gives an
 * oversized element chunks of its own (packed like `recursive`; the next element starts afresh).
 */
import type { DocumentElement } from '../plugins.js';

export type ChunkingStrategy = 'paragraph' | 'recursive';

export interface ChunkingOptions {
  /** Maximum characters per chunk. */
  chunkSize: number;
  /** Characters of context repeated from the previous chunk; must be < chunkSize. */
  chunkOverlap: number;
  strategy: ChunkingStrategy;
}

export interface ElementChunk {
  /** Position of the chunk in the document, from 0. */
  index: number;
  text: string;
  headingPath: string[];
  /** Page of the first element, when the parser knows pages. */
  page?: number;
  /** Index (in the input array) of the element the chunk starts in. */
  startElement: number;
  /** Index of the element the chunk ends in (inclusive). */
  endElement: number;
  /** Offset of `text` in `joinElementTexts(elements)`. */
  charStart?: number;
  /** The header row of the table the chunk starts inside of, past the table's start (see DocumentElement.tableHeader). */
  tableHeader?: string;
}

/** The separator between elements in the document text that chunk offsets refer to. */
export const elementSeparator = '\n\n';

/** The document text that `charStart` indexes: element texts joined by a blank line. */
export function joinElementTexts(elements: readonly DocumentElement[]): string {
  return elements.map((element) => element.text).join(elementSeparator);
}

/** A range [start, end) of the document text. */
interface Span {
  start: number;
  end: number;
}

/** A packable piece: a whole element, or a part of an element longer than chunkSize. */
interface Unit extends Span {
  element: number;
  /** A whole heading element: never left at the end of a chunk when it can move to the next. */
  isHeading: boolean;
}

const recursiveSeparators = ['\n\n', '\n', '. ', ' ', ''] as const;

function isWhitespace(code: number): boolean {
  // space, \t \n \v \f \r, no-break space
  return code === 32 || (code >= 9 && code <= 13) || code === 160;
}

function trimSpan(text: string, start: number, end: number): Span {
  let trimmedStart = start;
  let trimmedEnd = end;
  while (trimmedStart < trimmedEnd && isWhitespace(text.charCodeAt(trimmedStart))) trimmedStart++;
  while (trimmedEnd > trimmedStart && isWhitespace(text.charCodeAt(trimmedEnd - 1))) trimmedEnd--;
  return { start: trimmedStart, end: trimmedEnd };
}

function validateOptions({ chunkSize, chunkOverlap, strategy }: ChunkingOptions): void {
  if (!Number.isInteger(chunkSize) || chunkSize < 1) {
    throw new RangeError(`chunkSize must be a positive integer, got ${chunkSize}`);
  }
  if (!Number.isInteger(chunkOverlap) || chunkOverlap < 0 || chunkOverlap >= chunkSize) {
    throw new RangeError(`chunkOverlap must be an integer in [0, chunkSize), got ${chunkOverlap} for chunkSize ${chunkSize}`);
  }
  if (strategy !== 'paragraph' && strategy !== 'recursive') {
    throw new RangeError(`unknown chunking strategy ${String(strategy)}`);
  }
}

// ---------- recursive splitting ----------

/** Non-blank pieces of `span` between occurrences of `separator`; ". " keeps its period. */
function splitOnSeparator(text: string, span: Span, separator: string): Span[] {
  const pieces: Span[] = [];
  const keptLength = separator === '. ' ? 1 : 0;
  let position = span.start;
  while (position < span.end) {
    const found = text.indexOf(separator, position);
    const pieceEnd = found < 0 || found + separator.length > span.end ? span.end : found + keptLength;
    const piece = trimSpan(text, position, pieceEnd);
    if (piece.end > piece.start) pieces.push(piece);
    if (pieceEnd === span.end) break;
    position = found + separator.length;
  }
  return pieces;
}

/**
 * Appends to `pieces` the parts of `span` (of element `element`), each at most `limit` characters,
 * trying coarse separators first. Pieces are pushed, not returned, because one 2 MB paragraph
 * without sentence ends yields ~400,000 word pieces and per-level arrays dominated the run time.
 */
function splitRecursively(text: string, span: Span, element: number, limit: number, pieces: Unit[], level = 0): void {
  if (span.end - span.start <= limit) {
    pieces.push({ start: span.start, end: span.end, element, isHeading: false });
    return;
  }
  for (let separatorLevel = level; separatorLevel < recursiveSeparators.length; separatorLevel++) {
    const separator = recursiveSeparators[separatorLevel];
    if (separator === '') {
      // Hard cuts every `limit` code units, but never between the two halves of a surrogate pair
      // (an emoji cut in two would reach the database as two U+FFFD).
      for (let start = span.start; start < span.end; ) {
        let end = Math.min(start + limit, span.end);
        const beforeCut = text.charCodeAt(end - 1);
        if (end < span.end && end - start > 1 && beforeCut >= 0xd800 && beforeCut <= 0xdbff) end--;
        const piece = trimSpan(text, start, end);
        if (piece.end > piece.start) pieces.push({ ...piece, element, isHeading: false });
        start = end;
      }
      return;
    }
    const parts = splitOnSeparator(text, span, separator);
    if (parts.length > 1) {
      for (const part of parts) splitRecursively(text, part, element, limit, pieces, separatorLevel + 1);
      return;
    }
  }
  pieces.push({ start: span.start, end: span.end, element, isHeading: false });
}

/** A unit as is when it fits, else its recursive pieces. */
function fittingUnits(text: string, units: readonly Unit[], limit: number): Unit[] {
  const fitting: Unit[] = [];
  for (const unit of units) {
    if (unit.end - unit.start <= limit) fitting.push(unit);
    else splitRecursively(text, unit, unit.element, limit, fitting);
  }
  return fitting;
}

// ---------- packing ----------

/** Trailing headings of `units` that may open the next chunk instead (none if that empties the chunk). */
function trailingHeadingCount(units: readonly Unit[]): number {
  let count = 0;
  while (count < units.length && units[units.length - 1 - count].isHeading) count++;
  return count === units.length ? 0 : count;
}

/** Whether a word starting at `position` also starts a sentence or a line (after . ! ? or a line break). */
function startsSentenceOrLine(text: string, position: number): boolean {
  let before = position - 1;
  while (before >= 0 && isWhitespace(text.charCodeAt(before))) {
    if (text.charCodeAt(before) === 10) return true; // '\n'
    before--;
  }
  const previous = text[before];
  return previous === '.' || previous === '!' || previous === '?';
}

/**
 * Where the next chunk starts so it repeats at most `overlap` characters of `previous` and `next`
 * still fits: the earliest sentence or line start in that window, else its earliest word start
 * (a fragment such as "1." is worth less than a whole sentence), else no overlap.
 */
function textOverlapStart(text: string, previous: Span, next: Unit, chunkSize: number, overlap: number): number {
  if (overlap === 0) return next.start;
  const earliest = Math.max(previous.end - overlap, previous.start + 1, next.end - chunkSize);
  let firstWordStart: number | undefined;
  for (let position = earliest; position < previous.end; position++) {
    if (isWhitespace(text.charCodeAt(position)) || !isWhitespace(text.charCodeAt(position - 1))) continue;
    if (startsSentenceOrLine(text, position)) return position;
    firstWordStart ??= position;
  }
  return firstWordStart ?? next.start;
}

/** Greedy packing of consecutive units; each chunk after the first opens with a word-aligned text overlap. */
function packWithTextOverlap(text: string, units: readonly Unit[], chunkSize: number, overlap: number): Span[] {
  const chunks: Span[] = [];
  let current: Unit[] = [];
  let currentStart: number | undefined;
  for (const unit of units) {
    if (currentStart !== undefined && current.length > 0 && unit.end - currentStart > chunkSize) {
      const carried = trailingHeadingCount(current);
      if (carried > 0 && unit.end - current[current.length - carried].start <= chunkSize) {
        const headings = current.slice(current.length - carried);
        chunks.push({ start: currentStart, end: current[current.length - carried - 1].end });
        current = headings;
        currentStart = headings[0].start;
      } else {
        const previous = { start: currentStart, end: current[current.length - 1].end };
        chunks.push(previous);
        current = [];
        currentStart = textOverlapStart(text, previous, unit, chunkSize, overlap);
      }
    }
    currentStart ??= unit.start;
    current.push(unit);
  }
  if (currentStart !== undefined && current.length > 0) chunks.push({ start: currentStart, end: current[current.length - 1].end });
  return chunks;
}

/** Trailing whole elements of `previous` spanning at most `overlap` characters, that still let `next` fit. */
function elementOverlap(previous: readonly Unit[], next: Unit, chunkSize: number, overlap: number): Unit[] {
  const previousEnd = previous[previous.length - 1].end;
  let first = previous.length;
  while (
    first > 1 &&
    previousEnd - previous[first - 1].start <= overlap &&
    next.end - previous[first - 1].start <= chunkSize
  ) {
    first--;
  }
  return previous.slice(first);
}

/** Packs whole elements; an element longer than chunkSize gets chunks of its own. */
function packWholeElements(text: string, units: readonly Unit[], chunkSize: number, overlap: number): Span[] {
  const chunks: Span[] = [];
  let pending: Unit[] = [];
  const closePending = (members: readonly Unit[]): void => {
    if (members.length > 0) chunks.push({ start: members[0].start, end: members[members.length - 1].end });
  };
  for (const unit of units) {
    if (unit.end - unit.start > chunkSize) {
      // Headings right above an oversized element open its first chunk.
      const allHeadings = pending.every((pendingUnit) => pendingUnit.isHeading);
      const carried = allHeadings ? pending.length : trailingHeadingCount(pending);
      closePending(pending.slice(0, pending.length - carried));
      const ownUnits = pending.slice(pending.length - carried);
      splitRecursively(text, unit, unit.element, chunkSize, ownUnits);
      for (const chunk of packWithTextOverlap(text, ownUnits, chunkSize, overlap)) chunks.push(chunk);
      pending = [];
      continue;
    }
    if (pending.length > 0 && unit.end - pending[0].start > chunkSize) {
      const carried = trailingHeadingCount(pending);
      if (carried > 0 && unit.end - pending[pending.length - carried].start <= chunkSize) {
        closePending(pending.slice(0, pending.length - carried));
        pending = pending.slice(pending.length - carried);
      } else {
        closePending(pending);
        pending = elementOverlap(pending, unit, chunkSize, overlap);
      }
    }
    pending.push(unit);
  }
  closePending(pending);
  return chunks;
}

// ---------- document layout ----------

interface Layout {
  text: string;
  /** Trimmed span of each element in `text`, or undefined for a blank element. */
  spans: Array<Span | undefined>;
  /** Non-blank element indices, grouped into sections at top-level headings. */
  sections: number[][];
}

function isTopLevelHeading(element: DocumentElement): boolean {
  return element.type === 'title' || (element.type === 'heading' && (element.level ?? 1) <= 2);
}

function layOut(elements: readonly DocumentElement[]): Layout {
  const text = joinElementTexts(elements);
  const spans: Array<Span | undefined> = [];
  const sections: number[][] = [];
  let section: number[] = [];
  let sectionHasContent = false;
  let offset = 0;
  elements.forEach((element, index) => {
    const span = trimSpan(text, offset, offset + element.text.length);
    offset += element.text.length + elementSeparator.length;
    if (span.end === span.start) {
      spans.push(undefined);
      return;
    }
    spans.push(span);
    if (isTopLevelHeading(element) && sectionHasContent) {
      sections.push(section);
      section = [];
      sectionHasContent = false;
    }
    section.push(index);
    if (element.type !== 'heading' && element.type !== 'title') sectionHasContent = true;
  });
  if (section.length > 0) sections.push(section);
  return { text, spans, sections };
}

function sectionPath(element: DocumentElement): string[] {
  const isHeading = element.type === 'heading' || element.type === 'title';
  return isHeading ? [...element.headingPath, element.text.trim()] : [...element.headingPath];
}

/** The section path of the elements `first`..`last` holding most of `span`'s characters (the earliest on a tie). */
function widestSectionPath(elements: readonly DocumentElement[], layout: Layout, first: number, last: number, span: Span): string[] {
  const characters = new Map<string, { path: string[]; count: number }>();
  let widest: { path: string[]; count: number } | undefined;
  for (let index = first; index <= last; index++) {
    const element = layout.spans[index];
    if (!element) continue;
    const count = Math.min(element.end, span.end) - Math.max(element.start, span.start);
    const path = sectionPath(elements[index]);
    const key = JSON.stringify(path);
    const entry = characters.get(key) ?? { path, count: 0 };
    entry.count += Math.max(count, 0);
    characters.set(key, entry);
    if (!widest || entry.count > widest.count) widest = entry;
  }
  return widest?.path ?? sectionPath(elements[first]);
}

/** Index of the non-blank element whose span contains `offset`. */
function elementAt(layout: Layout, elementIndices: readonly number[], offset: number): number {
  let low = 0;
  let high = elementIndices.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if ((layout.spans[elementIndices[middle]] as Span).start <= offset) low = middle;
    else high = middle - 1;
  }
  return elementIndices[low];
}

export function chunkElements(elements: readonly DocumentElement[], options: ChunkingOptions): ElementChunk[] {
  validateOptions(options);
  return chunksOfLayout(elements, layOut(elements), options);
}

/**
 * `chunkElements`, and the elements again with texts cut from the same document text as the
 * chunks' (equal strings, each a slice of that one text). The chunks' slices keep the document
 * text alive; the elements' own texts, as parsed, are then no longer needed, so a large document's
 * elements and chunks hold one copy of its text instead of two (a 200 MB file's elements and
 * chunks held 400 MB of text while its chunks were embedded and written).
 */
export function chunkElementsSharingText(elements: readonly DocumentElement[], options: ChunkingOptions): { elements: DocumentElement[]; chunks: ElementChunk[] } {
  validateOptions(options);
  const layout = layOut(elements);
  let offset = 0;
  const sharing = elements.map((element) => {
    const text = layout.text.slice(offset, offset + element.text.length);
    offset += element.text.length + elementSeparator.length;
    return { ...element, text };
  });
  return { elements: sharing, chunks: chunksOfLayout(elements, layout, options) };
}

function chunksOfLayout(elements: readonly DocumentElement[], layout: Layout, { chunkSize, chunkOverlap, strategy }: ChunkingOptions): ElementChunk[] {
  const chunks: ElementChunk[] = [];
  for (const section of layout.sections) {
    const units: Unit[] = section.map((element) => ({
      ...(layout.spans[element] as Span),
      element,
      isHeading: elements[element].type === 'heading' || elements[element].type === 'title',
    }));
    const spans =
      strategy === 'paragraph'
        ? packWholeElements(layout.text, units, chunkSize, chunkOverlap)
        : packWithTextOverlap(layout.text, fittingUnits(layout.text, units, chunkSize), chunkSize, chunkOverlap);
    for (const span of spans) {
      const startElement = elementAt(layout, section, span.start);
      const endElement = elementAt(layout, section, span.end - 1);
      const first = elements[startElement];
      const continuesTable = first.tableHeader !== undefined && span.start > (layout.spans[startElement] as Span).start;
      chunks.push({
        index: chunks.length,
        text: layout.text.slice(span.start, span.end),
        headingPath: widestSectionPath(elements, layout, startElement, endElement, span),
        ...(first.page !== undefined ? { page: first.page } : {}),
        startElement,
        endElement,
        charStart: span.start,
        ...(continuesTable ? { tableHeader: first.tableHeader } : {}),
      });
    }
  }
  return chunks;
}
