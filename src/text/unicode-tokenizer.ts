/**
 * Tokens of text that holds non-ASCII characters: runs of letters and digits of any script,
 * folded by search-folding.ts, with runs of scripts written without spaces, and of Korean, cut
 * into overlapping character bigrams.
 *
 * Why bigrams: Chinese, Japanese, Thai, Lao, Khmer and Myanmar write words without spaces, so a
 * run is a whole phrase; a query word would never equal it. Lucene's CJKAnalyzer indexes such runs
 * as overlapping bigrams ("東京都" → "東京", "京都"), which matches any word of two or more
 * characters without a dictionary; a lone character is its own token. For the Southeast Asian
 * scripts, whose vowels and tones are combining marks, bigrams are of code points: coarser than a
 * dictionary's words, but a word still matches itself wherever it stands. Korean is written with
 * spaces, but its particles and endings join the word ("서울은", "서울에서"), so the query "서울"
 * equalled no word of either; its runs are bigrams too, as in Lucene's CJKBigramFilter.
 *
 * Pure-ASCII text never comes here (english-analyzer.ts has a faster loop for it), but on such
 * text this tokenizer gives the same tokens: ASCII letters and digits are exactly the ASCII
 * members of \p{L} and \p{N}.
 */
import { foldForSearch } from './search-folding.js';

/**
 * A letter or digit, then letters, digits and combining marks: marks continue a token because
 * scripts such as Devanagari write vowels with them, but never start one.
 */
export const letterOrDigitRun = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu; // only used through matchAll, which copies it

/**
 * Scripts indexed as bigrams, by script extension, so the marks kana words are written with
 * (the long-vowel mark "ー", the iteration mark "々") stay inside the run. Punctuation of these
 * scripts ("。", "・") never reaches this test: it is no letter, so letterOrDigitRun drops it.
 */
const bigramScriptClass = '[\\p{scx=Han}\\p{scx=Hiragana}\\p{scx=Katakana}\\p{scx=Hangul}\\p{scx=Thai}\\p{scx=Lao}\\p{scx=Khmer}\\p{scx=Myanmar}]';
const bigramScriptRun = new RegExp(`${bigramScriptClass}+`, 'gu');
/** One character of a script indexed as bigrams (tested on its own, no `g` flag). */
export const bigramScriptCharacter = new RegExp(bigramScriptClass, 'u');

/** Below U+0E00 (the Thai block) there is no character of those scripts. */
const firstBigramScriptCodeUnit = 0x0e00;

export function isAscii(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    if (text.charCodeAt(index) > 0x7f) return false;
  }
  return true;
}

function mayHoldBigramScript(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    if (text.charCodeAt(index) >= firstBigramScriptCodeUnit) return true;
  }
  return false;
}

/** Overlapping bigrams by code point (Han extension B and later lie outside the BMP). */
function pushCharacterBigrams(run: string, tokens: string[]): void {
  const characters = Array.from(run);
  if (characters.length === 1) {
    tokens.push(run);
    return;
  }
  for (let index = 0; index + 1 < characters.length; index++) tokens.push(characters[index] + characters[index + 1]);
}

/** Splits a folded run where a bigram script meets another ("東京2020" → "東京", "2020"). */
function pushScriptPieces(run: string, tokens: string[]): void {
  if (!mayHoldBigramScript(run)) {
    tokens.push(run);
    return;
  }
  let end = 0;
  for (const match of run.matchAll(bigramScriptRun)) {
    if (match.index > end) tokens.push(run.slice(end, match.index));
    pushCharacterBigrams(match[0], tokens);
    end = match.index + match[0].length;
  }
  if (end < run.length) tokens.push(run.slice(end));
}

/**
 * The tokens of `lowercaseText`, in order. A run is folded as a whole and then split again,
 * because folding can bring in separators ("½" becomes "1⁄2").
 */
export function unicodeTokens(lowercaseText: string): string[] {
  const tokens: string[] = [];
  for (const match of lowercaseText.matchAll(letterOrDigitRun)) {
    const run = match[0];
    if (isAscii(run)) {
      tokens.push(run);
      continue;
    }
    for (const folded of foldForSearch(run).matchAll(letterOrDigitRun)) pushScriptPieces(folded[0], tokens);
  }
  return tokens;
}
