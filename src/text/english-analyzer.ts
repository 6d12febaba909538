/**
 * The English analyzer shared by the keyword index and the local embedder.
 *
 * It reproduces /work/shared/tools/bm25_eval.py exactly (the script behind the reference figures,
 * Cranfield nDCG@10 0.3632 / recall@100 0.7396 with Porter stemming): Python's `text.lower()`, then
 * runs of [a-z0-9] (its TOKEN_RE), then its stop-word list, then its Porter stemmer. Any
 * difference here shows up as a keyword-quality difference against that reference.
 */
import { englishStopWords } from './english-stop-words.js';
import { porterStem } from './porter-stemmer.js';

/**
 * Stems are memoised because natural text repeats a small vocabulary: Cranfield's 1,400 documents
 * have 7,498 distinct tokens in ~250,000. 50,000 entries (~5 MB) hold the working vocabulary of a
 * large collection; past that the oldest entry goes first (Map keeps insertion order).
 */
const stemCacheLimit = 50_000;
const stemCache = new Map<string, string>();

function cachedStem(token: string): string {
  let stem = stemCache.get(token);
  if (stem === undefined) {
    stem = porterStem(token);
    if (stemCache.size >= stemCacheLimit) {
      const oldest = stemCache.keys().next().value as string;
      stemCache.delete(oldest);
    }
    stemCache.set(token, stem);
  }
  return stem;
}

function isAsciiLowerOrDigit(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 48 && code <= 57);
}

/**
 * Lowercase runs of [a-z0-9], in order, stop words included. Lowercasing happens first, like the
 * script's `text.lower()`, so "Kelvin sign" K (U+212A) becomes "k"; other non-ASCII letters
 * (é, ß, CJK) separate tokens rather than belong to them.
 */
export function tokenize(text: string): string[] {
  const lower = text.toLowerCase();
  const tokens: string[] = [];
  let start = -1;
  for (let index = 0; index < lower.length; index++) {
    if (isAsciiLowerOrDigit(lower.charCodeAt(index))) {
      if (start < 0) start = index;
    } else if (start >= 0) {
      tokens.push(lower.slice(start, index));
      start = -1;
    }
  }
  if (start >= 0) tokens.push(lower.slice(start));
  return tokens;
}

/** The terms a text is indexed and queried under: tokens minus stop words, Porter-stemmed. */
export function analyzeForIndex(text: string): string[] {
  const terms: string[] = [];
  for (const token of tokenize(text)) {
    if (!englishStopWords.has(token)) terms.push(cachedStem(token));
  }
  return terms;
}

/** The Porter stem of one lowercase token (memoised), for callers that tokenise on their own. */
export function stemToken(token: string): string {
  return cachedStem(token);
}
