/**
 * Where chunk-elements.ts may cut the document text: the recursive split of an element longer than a
 * chunk, and the position the next chunk's overlap starts at. Positions index the document text
 * (`joinElementTexts`).
 */

/** A range [start, end) of the document text. */
export interface Span {
  start: number;
  end: number;
}

/** A packable piece: a whole element, or a part of an element longer than chunkSize. */
export interface Unit extends Span {
  element: number;
  /** A whole heading element: never left at the end of a chunk when it can move to the next. */
  isHeading: boolean;
}

/** How long the pieces of an oversized element may be. */
export interface PieceLimits {
  limit: number;
  /** Length of the pieces a run without separators is cut into (`hardCutLength`). */
  hardCut: number;
  /** A shorter limit for the piece starting at `at` (the element's start), leaving room for the headings above it. */
  opening?: { at: number; limit: number };
}

// LangChain's separators, with the CJK sentence ends and the ideographic comma before the hard cut:
// text written without spaces (260 characters of Japanese) was cut every chunkSize characters, mid-phrase.
const recursiveSeparators = ['\n\n', '\n', '. ', ' ', '。', '！', '？', '、', ''] as const;
/** Separators whose first character stays with the piece before them (". " keeps its period). */
const punctuationSeparators = new Set<string>(['. ', '。', '！', '？', '、']);

function isWhitespace(code: number): boolean {
  // space, \t \n \v \f \r, no-break space
  return code === 32 || (code >= 9 && code <= 13) || code === 160;
}

/** 。！？ and 、: a word may start right after them without a space. */
function isCjkBreak(code: number): boolean {
  return code === 0x3002 || code === 0xff01 || code === 0xff1f || code === 0x3001;
}

export function trimSpan(text: string, start: number, end: number): Span {
  let trimmedStart = start;
  let trimmedEnd = end;
  while (trimmedStart < trimmedEnd && isWhitespace(text.charCodeAt(trimmedStart))) trimmedStart++;
  while (trimmedEnd > trimmedStart && isWhitespace(text.charCodeAt(trimmedEnd - 1))) trimmedEnd--;
  return { start: trimmedStart, end: trimmedEnd };
}

/**
 * Length of the pieces a run without separators is cut into: short enough that the next chunk's
 * overlap fits beside one (cut at chunkSize, a long token's chunks could carry none), but at least
 * half a chunk, so an overlap of chunkSize - 1 does not turn a 400,000-character token into
 * 400,000 chunks.
 */
export function hardCutLength(chunkSize: number, overlap: number): number {
  return Math.max(chunkSize - overlap, Math.ceil(chunkSize / 2));
}

/** Non-blank pieces of `span` between occurrences of `separator`; ". " keeps its period, "。" itself. */
function splitOnSeparator(text: string, span: Span, separator: string): Span[] {
  const pieces: Span[] = [];
  const keptLength = punctuationSeparators.has(separator) ? 1 : 0;
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
 * Appends to `pieces` the parts of `span` (of element `element`), each within `limits`, trying
 * coarse separators first. Pieces are pushed, not returned, because one 2 MB paragraph without
 * sentence ends yields ~400,000 word pieces and per-level arrays dominated the run time.
 */
export function splitRecursively(text: string, span: Span, element: number, limits: PieceLimits, pieces: Unit[], level = 0): void {
  const limit = span.start === limits.opening?.at ? limits.opening.limit : limits.limit;
  if (span.end - span.start <= limit) {
    pieces.push({ start: span.start, end: span.end, element, isHeading: false });
    return;
  }
  for (let separatorLevel = level; separatorLevel < recursiveSeparators.length; separatorLevel++) {
    const separator = recursiveSeparators[separatorLevel];
    if (separator === '') {
      // Hard cuts, but never between the two halves of a surrogate pair (an emoji cut in two would
      // reach the database as two U+FFFD).
      for (let start = span.start; start < span.end; ) {
        const length = start === limits.opening?.at ? Math.min(limits.opening.limit, limits.hardCut) : limits.hardCut;
        let end = Math.min(start + length, span.end);
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
      for (const part of parts) splitRecursively(text, part, element, limits, pieces, separatorLevel + 1);
      return;
    }
  }
  pieces.push({ start: span.start, end: span.end, element, isHeading: false });
}

/** What starts at `position`: a line, a sentence, a word (after whitespace or 、), or nothing (mid-word, whitespace). */
function boundaryAt(text: string, position: number): 'line' | 'sentence' | 'word' | undefined {
  if (isWhitespace(text.charCodeAt(position))) return undefined;
  const just = text.charCodeAt(position - 1);
  if (isCjkBreak(just)) return just === 0x3001 ? 'word' : 'sentence';
  if (!isWhitespace(just)) return undefined;
  let before = position - 1;
  while (before >= 0 && isWhitespace(text.charCodeAt(before))) {
    if (text.charCodeAt(before) === 10) return 'line'; // '\n'
    before--;
  }
  return before >= 0 && '.!?。！？'.includes(text[before]) ? 'sentence' : 'word';
}

/** Whether `next` goes on right where `previous` was cut, inside a token (a hard cut, not a CJK break). */
function cutsThroughToken(text: string, previous: Span, next: Span): boolean {
  return previous.end === next.start && !isCjkBreak(text.charCodeAt(next.start - 1));
}

/**
 * Where the next chunk starts so it repeats at most `overlap` characters of `previous` and `next`
 * still fits: the earliest sentence or line start in that window, else its earliest word start
 * (a fragment such as "1." is worth less than a whole sentence). Inside a table or code block
 * (`keepsLines`) only a line start will do, so the overlap is whole rows or lines: a chunk opening
 * with "item 1 that goes on | 100 NOK" sat under a header row it did not line up with. A token cut
 * in two (longer than a chunk, or text without spaces) overlaps by the whole window, outside tables
 * and code; anything else gets no overlap.
 */
export function textOverlapStart(
  text: string,
  previous: Span,
  next: Span,
  chunkSize: number,
  overlap: number,
  keepsLines: (position: number) => boolean,
): number {
  if (overlap === 0) return next.start;
  const earliest = Math.max(previous.end - overlap, previous.start + 1, next.end - chunkSize);
  let firstWordStart: number | undefined;
  for (let position = earliest; position < previous.end; position++) {
    const boundary = boundaryAt(text, position);
    if (boundary === undefined) continue;
    if (boundary === 'line') return position;
    if (keepsLines(position)) continue;
    if (boundary === 'sentence') return position;
    firstWordStart ??= position;
  }
  if (firstWordStart !== undefined) return firstWordStart;
  if (earliest >= previous.end || !cutsThroughToken(text, previous, next) || keepsLines(earliest)) return next.start;
  // Never between the two halves of a surrogate pair.
  const atLowSurrogate = text.charCodeAt(earliest) >= 0xdc00 && text.charCodeAt(earliest) <= 0xdfff;
  const start = atLowSurrogate ? earliest + 1 : earliest;
  return start < previous.end ? start : next.start;
}
