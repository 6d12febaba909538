/**
 * Folds one lowercase, non-ASCII token to the form it is indexed and queried under, so that
 * "café", "CAFE" and "cafe\u0301" (decomposed) are one term, "Straße" meets "strasse", and
 * full-width "ＡＢＣ" or the PDF ligature in "ﬁnance" meet their plain spelling.
 *
 * Latin letters lose their diacritics as Lucene's ASCIIFoldingFilter does, because users type
 * "resume" for "résumé" and "Muller" for "Müller". Other scripts keep their marks: Cyrillic "й"
 * is not "и", and Devanagari vowel signs are letters of the word, not decoration.
 */

/**
 * Latin letters that Unicode does not decompose (no NFKD form), with the ASCII spelling
 * Lucene's ASCIIFoldingFilter gives them. Only lowercase forms: tokens arrive lowercased.
 */
const undecomposableLatinLetters: Readonly<Record<string, string>> = {
  'ß': 'ss', // German
  'æ': 'ae', // Danish, Norwegian, Icelandic, Old English
  'œ': 'oe', // French
  'ø': 'o', // Danish, Norwegian
  'ð': 'd', // Icelandic, Faroese
  'þ': 'th', // Icelandic
  'ł': 'l', // Polish
  'đ': 'd', // Croatian, Serbian Latin, Vietnamese
  'ı': 'i', // Turkish, Azerbaijani dotless i
  'ə': 'a', // Azerbaijani schwa (Lucene folds it to a)
  'ħ': 'h', // Maltese
  'ŧ': 't', // Northern Sami
  'ŋ': 'n', // Sami, many African orthographies
  'ĸ': 'q', // old Greenlandic kra
  'ƒ': 'f',
  'ɛ': 'e', // African orthographies (Akan, Ewe, Lingala)
  'ɔ': 'o',
  'ɓ': 'b', // Hausa, Fula
  'ɗ': 'd',
  'ƙ': 'k',
  'ƴ': 'y',
};
const undecomposableLatinLetter = new RegExp(`[${Object.keys(undecomposableLatinLetters).join('')}]`, 'g');

/**
 * Combining marks that follow a Latin letter (the accents NFKD splits off) or a script-neutral
 * character (a digit's keycap, a stray mark after a space). Marks after any other script's
 * letters stay: they spell the word.
 */
const latinDiacritics = /([\p{Script=Latin}\p{Script=Common}])\p{M}+/gu;

/**
 * NFKD splits accents off and maps compatibility forms (full-width letters, ligatures,
 * superscript digits) to plain ones; lowercasing again catches what NFKD uncovers in capitals
 * (mathematical bold "𝐀" becomes "A"); NFC puts the kept marks back on their letters, so a
 * Cyrillic "й" or a Japanese "ガ" is one character again, however it was typed.
 */
export function foldForSearch(lowercaseToken: string): string {
  return lowercaseToken
    .normalize('NFKD')
    .toLowerCase()
    .replace(latinDiacritics, '$1')
    .replace(undecomposableLatinLetter, (letter) => undecomposableLatinLetters[letter]!)
    .normalize('NFC');
}
