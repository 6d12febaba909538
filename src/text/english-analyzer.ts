/**
 * The analyzer shared by the keyword index and the local embedder: English rules for ASCII words,
 * folded Unicode tokens for every other script.
 *
 * On ASCII text it reproduces /work/shared/tools/bm25_eval.py exactly (the script behind the
 * reference figures, Cranfield nDCG@10 0.3632 / recall@100 0.7396 with Porter stemming): Python's
 * `text.lower()`, then runs of [a-z0-9] (its TOKEN_RE), then its stop-word list, then its Porter
 * stemmer. Any difference there shows up as a keyword-quality difference against that reference.
 *
 * Text with any other character goes through unicode-tokenizer.ts: letters and digits of every
 * script, Latin diacritics folded away ("café" is "cafe", so it is stemmed like it), Chinese and
 * Japanese as character bigrams. Stop words and stemming are English, so they apply only to tokens
 * that are ASCII once folded; a Russian or Japanese token is indexed as it is.
 */
import { englishStopWords } from './english-stop-words.js';
import { porterStem } from './porter-stemmer.js';
import { isAscii, unicodeTokens } from './unicode-tokenizer.js';

/**
 * Stems are memoised because natural text repeats a small vocabulary: Cranfield's 1,400 documents
 * have 7,498 distinct tokens in ~250,000. 50,000 entries (~5 MB) hold the working vocabulary of a
 * large collection; past that the oldest entry goes first (Map keeps insertion order).
 */
const stemCacheLimit = 50_000;
const stemCache = new Map<string, string>();

function stemAndRemember(token: string): string {
  const stem = porterStem(token);
  if (stemCache.size >= stemCacheLimit) {
    const oldest = stemCache.keys().next().value as string;
    stemCache.delete(oldest);
  }
  stemCache.set(token, stem);
  return stem;
}

function isAsciiLowerOrDigit(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 48 && code <= 57);
}

/**
 * Lowercase tokens, in order, stop words included. Lowercasing happens first, like the script's
 * `text.lower()`, so the "Kelvin sign" K (U+212A) becomes "k" and its text stays on the ASCII path.
 * Ingestion calls this for every chunk, and most text is ASCII: the loop below handles it without
 * regular expressions or normalisation, and hands the text over at its first non-ASCII character.
 */
export function tokenize(text: string): string[] {
  const lower = text.toLowerCase();
  const tokens: string[] = [];
  let start = -1;
  for (let index = 0; index < lower.length; index++) {
    const code = lower.charCodeAt(index);
    if (isAsciiLowerOrDigit(code)) {
      if (start < 0) start = index;
    } else if (code > 0x7f) {
      return unicodeTokens(lower);
    } else if (start >= 0) {
      tokens.push(lower.slice(start, index));
      start = -1;
    }
  }
  if (start >= 0) tokens.push(lower.slice(start));
  return tokens;
}

/**
 * The term a token is indexed and queried under: undefined for an English stop word, the Porter
 * stem for any other ASCII token, the token itself in other scripts (Porter's rules are English).
 */
export function indexTerm(token: string): string | undefined {
  if (englishStopWords.has(token)) return undefined;
  // The cache holds ASCII tokens only, so a hit needs no ASCII test: the common case costs one lookup.
  const stem = stemCache.get(token);
  if (stem !== undefined) return stem;
  return isAscii(token) ? stemAndRemember(token) : token;
}

/** The terms a text is indexed and queried under, in order. */
export function analyzeForIndex(text: string): string[] {
  const terms: string[] = [];
  for (const token of tokenize(text)) {
    const term = indexTerm(token);
    if (term !== undefined) terms.push(term);
  }
  return terms;
}
