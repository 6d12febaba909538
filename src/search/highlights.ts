/**
 * Where a result's text holds the query's terms (`highlight: true`), as offsets into `text`, so an
 * app can mark them with whatever markup it uses (no HTML to escape or strip).
 *
 * A word is highlighted when the analyzer the keyword index uses (english-analyzer.ts: lowercase,
 * folded accents, stop words, Porter stems) makes it a term the query has: the query "running"
 * marks "runs" and "ran" not, as BM25 counts them. The text is cut into runs of letters and digits
 * as the analyzer cuts it, but on the original text, so offsets never shift where lowercasing or
 * folding changes a string's length. Scripts written without spaces are indexed as character
 * bigrams (unicode-tokenizer.ts); there each matching bigram's two characters are marked, not the
 * whole phrase.
 */
import { analyzeForIndex } from '../text/english-analyzer.js';
import { bigramScriptCharacter, letterOrDigitRun } from '../text/unicode-tokenizer.js';

export interface Highlight {
  start: number;
  end: number;
}

/** The query's terms, as the keyword index looks them up. */
export function highlightTerms(query: string): ReadonlySet<string> {
  return new Set(analyzeForIndex(query));
}

const matches = (text: string, terms: ReadonlySet<string>) => analyzeForIndex(text).some((term) => terms.has(term));

/** Code points of a run with their offsets, in segments of bigram-script characters and of others. */
interface Segment {
  bigramScript: boolean;
  characters: Array<{ text: string; start: number }>;
}

function segmentsOf(run: string, offset: number): Segment[] {
  const segments: Segment[] = [];
  let position = offset;
  for (const character of run) {
    const bigramScript = bigramScriptCharacter.test(character);
    const last = segments[segments.length - 1];
    if (last && last.bigramScript === bigramScript) last.characters.push({ text: character, start: position });
    else segments.push({ bigramScript, characters: [{ text: character, start: position }] });
    position += character.length;
  }
  return segments;
}

/** Marks within a run that mixes in a script written without spaces: each matching bigram, and each other piece whole. */
function pushBigramRunHighlights(run: string, offset: number, terms: ReadonlySet<string>, highlights: Highlight[]): void {
  for (const { bigramScript, characters } of segmentsOf(run, offset)) {
    const first = characters[0]!;
    const last = characters[characters.length - 1]!;
    if (!bigramScript || characters.length === 1) {
      if (matches(characters.map((character) => character.text).join(''), terms)) highlights.push({ start: first.start, end: last.start + last.text.length });
      continue;
    }
    for (let index = 0; index + 1 < characters.length; index++) {
      const [left, right] = [characters[index]!, characters[index + 1]!];
      if (matches(left.text + right.text, terms)) highlights.push({ start: left.start, end: right.start + right.text.length });
    }
  }
}

/** The spans of `text` that hold a query term, in order, overlapping and touching ones merged. */
export function highlightSpans(text: string, terms: ReadonlySet<string>): Highlight[] {
  if (terms.size === 0) return [];
  const found: Highlight[] = [];
  for (const match of text.matchAll(letterOrDigitRun)) {
    const run = match[0];
    if (bigramScriptCharacter.test(run)) pushBigramRunHighlights(run, match.index, terms, found);
    else if (matches(run, terms)) found.push({ start: match.index, end: match.index + run.length });
  }
  const merged: Highlight[] = [];
  for (const span of found) {
    const last = merged[merged.length - 1];
    if (last && span.start <= last.end) last.end = Math.max(last.end, span.end);
    else merged.push({ ...span });
  }
  return merged;
}
