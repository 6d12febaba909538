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
 *   does not is split recursively on ["\n\n", "\n", ". ", " "] (LangChain's separators), then on
 *   "。", "！", "？", "、" for text without spaces, and last cut hard (text-cuts.ts). Headings right
 *   above a split element open a chunk with its start rather than stand alone.
 * - Overlap never starts mid-word, and inside a table or code block only at a row or line: it is
 *   the largest run of whole rows or lines within `chunkOverlap`, possibly none. A token cut hard
 *   overlaps by raw characters.
 * - headingPath is the section path holding most of the chunk's characters, an element's path being
 *   its headingPath plus the element itself when it is a heading (a chunk opening with "## Install"
 *   is about Install). A chunk that opens with the tail of one subsection (or its overlap) and goes
 *   on into the next is about the next: the first element's path mislabelled such chunks.
 *
 * `recursive` packs the pieces greedily and starts each chunk with up to `chunkOverlap` characters
 * of the previous one, cut at a sentence start if the window holds one, else at a word start.
 * `paragraph` packs whole elements, so its chunks end between elements, and starts each chunk with
 * the trailing whole element(s) of the previous one that fit in `chunkOverlap`, else with the tail
 * of its last element cut as `recursive` cuts. An oversized element gets chunks of its own (packed
 * like `recursive`); the element after it opens with the tail of its last chunk.
 */
import type { DocumentElement } from '../plugins.js';
import { hardCutLength, splitRecursively, textOverlapStart, trimSpan, type PieceLimits, type Span, type Unit } from './text-cuts.js';

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
  charStart: number;
  /** The header row of the table the chunk starts inside of, past the table's start, when at most half a chunk long (see DocumentElement.tableHeader). */
  tableHeader?: string;
}

/** The separator between elements in the document text that chunk offsets refer to. */
export const elementSeparator = '\n\n';

/** Whether an element has no text a chunk could hold (a page break, an image without alt text): it is skipped. */
export function isBlankElement(element: DocumentElement): boolean {
  const span = trimSpan(element.text, 0, element.text.length);
  return span.end === span.start;
}

/** The document text that `charStart` indexes: element texts joined by a blank line. */
export function joinElementTexts(elements: readonly DocumentElement[]): string {
  return elements.map((element) => element.text).join(elementSeparator);
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

// ---------- packing ----------

/** What packing needs besides the units. */
interface Packing {
  text: string;
  chunkSize: number;
  overlap: number;
  /** Whether `position` lies in a table or a code block, whose overlap must be whole rows or lines. */
  keepsLines: (position: number) => boolean;
}

/** Trailing headings of `units` that may open the next chunk instead (none if that empties the chunk). */
function trailingHeadingCount(units: readonly Unit[]): number {
  let count = 0;
  while (count < units.length && units[units.length - 1 - count].isHeading) count++;
  return count === units.length ? 0 : count;
}

/**
 * Appends the pieces of `unit`, an element longer than a chunk, to `pieces`. When headings right
 * above it (from `headingsStart`) would not fit beside its first piece, that piece is cut shorter so
 * they open a chunk together: "# L" over 400,000 characters without a space was a chunk "L". A
 * heading longer than half a chunk says enough to stand alone.
 */
function splitOversized({ text, chunkSize, overlap }: Packing, unit: Unit, headingsStart: number | undefined, pieces: Unit[]): void {
  const lead = headingsStart === undefined ? 0 : unit.start - headingsStart;
  const limits: PieceLimits = { limit: chunkSize, hardCut: hardCutLength(chunkSize, overlap) };
  if (lead > 0 && lead <= chunkSize / 2) limits.opening = { at: unit.start, limit: chunkSize - lead };
  splitRecursively(text, unit, unit.element, limits, pieces);
}

/** A unit as is when it fits, else its recursive pieces. */
function fittingUnits(packing: Packing, units: readonly Unit[]): Unit[] {
  const fitting: Unit[] = [];
  let headingsStart: number | undefined;
  for (const unit of units) {
    if (unit.end - unit.start <= packing.chunkSize) fitting.push(unit);
    else splitOversized(packing, unit, headingsStart, fitting);
    headingsStart = unit.isHeading ? (headingsStart ?? unit.start) : undefined;
  }
  return fitting;
}

/** Greedy packing of consecutive units; each chunk after the first opens with a word-aligned text overlap. */
function packWithTextOverlap(packing: Packing, units: readonly Unit[]): Span[] {
  const { chunkSize } = packing;
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
        currentStart = textOverlapStart(packing.text, previous, unit, chunkSize, packing.overlap, packing.keepsLines);
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

/** The tail of chunk `previous` (ending in element `element`) that opens the chunk of `next`, as a unit; none if no boundary allows one. */
function tailOverlap(packing: Packing, previous: Span, element: number, next: Unit): Unit[] {
  const start = textOverlapStart(packing.text, previous, next, packing.chunkSize, packing.overlap, packing.keepsLines);
  return start < previous.end ? [{ start, end: previous.end, element, isHeading: false }] : [];
}

/**
 * What of the closed chunk `previous` opens the chunk of `next`: its trailing whole elements when
 * they fit in the overlap, else the tail of its last element from a sentence or word start (whole
 * rows or lines of a table or code block). Paragraphs are mostly longer than the overlap, so whole
 * elements alone left a long document's paragraph chunks sharing nothing.
 */
function paragraphOverlap(packing: Packing, previous: readonly Unit[], next: Unit): Unit[] {
  const whole = elementOverlap(previous, next, packing.chunkSize, packing.overlap);
  if (whole.length > 0) return whole;
  const last = previous[previous.length - 1];
  return tailOverlap(packing, { start: previous[0].start, end: last.end }, last.element, next);
}

/**
 * Packs whole elements, each chunk opening with `paragraphOverlap` of the one before; an element
 * longer than chunkSize gets chunks of its own, packed like `recursive`.
 */
function packWholeElements(packing: Packing, units: readonly Unit[]): Span[] {
  const chunks: Span[] = [];
  let pending: Unit[] = [];
  // How many of `pending`'s first units repeat the chunk before: they never make a chunk by themselves.
  let repeated = 0;
  // The last chunk of an oversized element (of its own, so not in `pending`): the next element opens with its tail.
  let oversizedEnd: { chunk: Span; element: number } | undefined;
  const closePending = (members: readonly Unit[]): void => {
    if (members.length > repeated) chunks.push({ start: members[0].start, end: members[members.length - 1].end });
  };
  const openingOf = (closed: readonly Unit[], next: Unit): Unit[] => {
    if (closed.length > repeated) return paragraphOverlap(packing, closed, next);
    return oversizedEnd ? tailOverlap(packing, oversizedEnd.chunk, oversizedEnd.element, next) : [];
  };
  for (const unit of units) {
    if (unit.end - unit.start > packing.chunkSize) {
      // Headings right above an oversized element open its first chunk.
      const allHeadings = pending.slice(repeated).every((pendingUnit) => pendingUnit.isHeading);
      const carried = allHeadings ? pending.length - repeated : trailingHeadingCount(pending);
      const closed = pending.slice(0, pending.length - carried);
      closePending(closed);
      const headings = pending.slice(pending.length - carried);
      const pieces: Unit[] = [];
      splitOversized(packing, unit, headings[0]?.start, pieces);
      const ownUnits = headings.length > 0 ? [...headings, ...pieces] : [...openingOf(closed, pieces[0]), ...pieces];
      const ownChunks = packWithTextOverlap(packing, ownUnits);
      for (const chunk of ownChunks) chunks.push(chunk);
      oversizedEnd = { chunk: ownChunks[ownChunks.length - 1], element: unit.element };
      pending = [];
      repeated = 0;
      continue;
    }
    if (pending.length === 0) {
      pending = openingOf([], unit);
      repeated = pending.length;
    } else if (unit.end - pending[0].start > packing.chunkSize) {
      const carried = trailingHeadingCount(pending);
      if (carried > 0 && unit.end - pending[pending.length - carried].start <= packing.chunkSize) {
        closePending(pending.slice(0, pending.length - carried));
        pending = pending.slice(pending.length - carried);
        repeated = 0;
      } else {
        closePending(pending);
        pending = openingOf(pending, unit);
        repeated = pending.length;
      }
    }
    oversizedEnd = undefined;
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
    const packing: Packing = {
      text: layout.text,
      chunkSize,
      overlap: chunkOverlap,
      keepsLines: (position) => {
        const { type } = elements[elementAt(layout, section, position)];
        return type === 'table' || type === 'code';
      },
    };
    const spans = strategy === 'paragraph' ? packWholeElements(packing, units) : packWithTextOverlap(packing, fittingUnits(packing, units));
    for (const span of spans) {
      const startElement = elementAt(layout, section, span.start);
      const endElement = elementAt(layout, section, span.end - 1);
      const first = elements[startElement];
      // A header row longer than half a chunk is more data than column names: repeated on every
      // continuation chunk (and embedded with each), a multi-KB one crowded out the rows themselves.
      const header = first.tableHeader !== undefined && first.tableHeader.length <= chunkSize / 2 ? first.tableHeader : undefined;
      const continuesTable = header !== undefined && span.start > (layout.spans[startElement] as Span).start;
      chunks.push({
        index: chunks.length,
        text: layout.text.slice(span.start, span.end),
        headingPath: widestSectionPath(elements, layout, startElement, endElement, span),
        ...(first.page !== undefined ? { page: first.page } : {}),
        startElement,
        endElement,
        charStart: span.start,
        ...(continuesTable ? { tableHeader: header } : {}),
      });
    }
  }
  return chunks;
}
