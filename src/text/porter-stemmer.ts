/**
 * M. F. Porter's 1980 suffix-stripping algorithm, ported line by line from the `Porter` class of
 * /work/shared/tools/bm25_eval.py, the script behind the reference keyword figures.
 *
 * Why not the `stemmer` package: it implements Porter's later revision, which adds the step-2
 * rules `bli → ble` and `logi → log`. On the 7,498 distinct Cranfield tokens it disagrees with the
 * script on 9 words (possibly, assembly, technology, terminology, analogy...), so the keyword index
 * would no longer match the script's vocabulary. This port agrees on all 7,498.
 *
 * Input is a lowercase [a-z0-9]+ token, as produced by the English analyzer.
 */

const lowercaseY = 121; // 'y'

function isVowelLetter(code: number): boolean {
  // a e i o u
  return code === 97 || code === 101 || code === 105 || code === 111 || code === 117;
}

/** Porter's consonant test: `y` is a consonant at the start or after a vowel. */
function isConsonant(word: string, index: number): boolean {
  const code = word.charCodeAt(index);
  if (isVowelLetter(code)) return false;
  if (code === lowercaseY) return index === 0 || !isConsonant(word, index - 1);
  return true;
}

/** m in [C](VC)^m[V]: how many vowel-to-consonant transitions `stem` has. */
function measure(stem: string): number {
  let m = 0;
  let previousWasVowel = false;
  for (let index = 0; index < stem.length; index++) {
    const consonant = isConsonant(stem, index);
    if (consonant && previousWasVowel) m++;
    previousWasVowel = !consonant;
  }
  return m;
}

function hasVowel(stem: string): boolean {
  for (let index = 0; index < stem.length; index++) {
    if (!isConsonant(stem, index)) return true;
  }
  return false;
}

function endsWithDoubleConsonant(word: string): boolean {
  const n = word.length;
  return n >= 2 && word[n - 1] === word[n - 2] && isConsonant(word, n - 1);
}

/** *o: ends consonant-vowel-consonant, the last not w, x or y. */
function endsConsonantVowelConsonant(word: string): boolean {
  const n = word.length;
  if (n < 3) return false;
  if (!(isConsonant(word, n - 3) && !isConsonant(word, n - 2) && isConsonant(word, n - 1))) return false;
  const last = word[n - 1];
  return last !== 'w' && last !== 'x' && last !== 'y';
}

type SuffixRule = readonly [suffix: string, replacement: string];

/** Longest suffix first: the script sorts each list by length (stable), then takes the first match. */
function longestFirst<T extends string | SuffixRule>(rules: T[], suffixOf: (rule: T) => string): T[] {
  return rules
    .map((rule, position) => ({ rule, position }))
    .sort((a, b) => suffixOf(b.rule).length - suffixOf(a.rule).length || a.position - b.position)
    .map(({ rule }) => rule);
}

const step2Rules: readonly SuffixRule[] = longestFirst<SuffixRule>(
  [
    ['ational', 'ate'], ['tional', 'tion'], ['enci', 'ence'], ['anci', 'ance'], ['izer', 'ize'],
    ['abli', 'able'], ['alli', 'al'], ['entli', 'ent'], ['eli', 'e'], ['ousli', 'ous'],
    ['ization', 'ize'], ['ation', 'ate'], ['ator', 'ate'], ['alism', 'al'], ['iveness', 'ive'],
    ['fulness', 'ful'], ['ousness', 'ous'], ['aliti', 'al'], ['iviti', 'ive'], ['biliti', 'ble'],
  ],
  ([suffix]) => suffix,
);

const step3Rules: readonly SuffixRule[] = longestFirst<SuffixRule>(
  [['icate', 'ic'], ['ative', ''], ['alize', 'al'], ['iciti', 'ic'], ['ical', 'ic'], ['ful', ''], ['ness', '']],
  ([suffix]) => suffix,
);

const step4Suffixes: readonly string[] = longestFirst(
  ['al', 'ance', 'ence', 'er', 'ic', 'able', 'ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'ou', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize'],
  (suffix) => suffix,
);

/** Applies the first (longest) rule whose suffix matches, if the remaining stem has m > 0. */
function replaceLongestSuffix(word: string, rules: readonly SuffixRule[]): string {
  for (const [suffix, replacement] of rules) {
    if (word.endsWith(suffix)) {
      const stem = word.slice(0, word.length - suffix.length);
      return measure(stem) > 0 ? stem + replacement : word;
    }
  }
  return word;
}

function step1ab(input: string): string {
  let word = input;
  if (word.endsWith('sses') || word.endsWith('ies')) word = word.slice(0, -2);
  else if (word.endsWith('ss')) {
    // unchanged
  } else if (word.endsWith('s')) word = word.slice(0, -1);

  let removedEdOrIng = false;
  if (word.endsWith('eed')) {
    if (measure(word.slice(0, -3)) > 0) word = word.slice(0, -1);
  } else if (word.endsWith('ed') && hasVowel(word.slice(0, -2))) {
    word = word.slice(0, -2);
    removedEdOrIng = true;
  } else if (word.endsWith('ing') && hasVowel(word.slice(0, -3))) {
    word = word.slice(0, -3);
    removedEdOrIng = true;
  }
  if (removedEdOrIng) {
    const last = word[word.length - 1];
    if (word.endsWith('at') || word.endsWith('bl') || word.endsWith('iz')) word += 'e';
    else if (endsWithDoubleConsonant(word) && last !== 'l' && last !== 's' && last !== 'z') word = word.slice(0, -1);
    else if (measure(word) === 1 && endsConsonantVowelConsonant(word)) word += 'e';
  }
  return word;
}

function step4(word: string): string {
  for (const suffix of step4Suffixes) {
    if (word.endsWith(suffix)) {
      const stem = word.slice(0, word.length - suffix.length);
      if (measure(stem) > 1) {
        const last = stem[stem.length - 1];
        if (suffix !== 'ion' || last === 's' || last === 't') return stem;
      }
      return word;
    }
  }
  return word;
}

function step5(input: string): string {
  let word = input;
  if (word.endsWith('e')) {
    const stem = word.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !endsConsonantVowelConsonant(stem))) word = stem;
  }
  if (measure(word) > 1 && endsWithDoubleConsonant(word) && word.endsWith('l')) word = word.slice(0, -1);
  return word;
}

/** Porter stem of a lowercase token; words of 1-2 letters are returned unchanged. */
export function porterStem(token: string): string {
  if (token.length <= 2) return token;
  let word = step1ab(token);
  // step 1c
  if (word.endsWith('y') && hasVowel(word.slice(0, -1))) word = word.slice(0, -1) + 'i';
  word = replaceLongestSuffix(word, step2Rules);
  word = replaceLongestSuffix(word, step3Rules);
  word = step4(word);
  return step5(word);
}
