import t from 'tap';
import { foldForSearch } from '../../src/text/search-folding.js';

t.test('Latin diacritics fold away, whether typed precomposed or decomposed', async (t) => {
  t.equal(foldForSearch('café'), 'cafe');
  t.equal(foldForSearch('cafe\u0301'), 'cafe', 'e + COMBINING ACUTE ACCENT');
  t.equal(foldForSearch('résumé'), 'resume');
  t.equal(foldForSearch('naïve'), 'naive');
  t.equal(foldForSearch('ångström'), 'angstrom');
  t.equal(foldForSearch('đường'), 'duong', 'Vietnamese: stacked marks and đ');
  t.equal(foldForSearch('i\u0307stanbul'), 'istanbul', '"İstanbul".toLowerCase() keeps a combining dot above');
});

t.test('Latin letters without a decomposition take their ASCII spelling', async (t) => {
  const expected: Record<string, string> = {
    straße: 'strasse', æble: 'aeble', œuvre: 'oeuvre', søren: 'soren', łódź: 'lodz', đakovo: 'dakovo',
    þór: 'thor', eðli: 'edli', ıspanak: 'ispanak', ħamrun: 'hamrun', ŋaatu: 'naatu', bakı: 'baki',
  };
  for (const [word, folded] of Object.entries(expected)) t.equal(foldForSearch(word), folded, word);
});

const foldings: Array<[string, string, string, string]> = [
  ['compatibility forms become the plain characters', 'ﬁnance', 'finance', 'PDF ligature'],
  ['compatibility forms become the plain characters', 'ａｂｃ１２３', 'abc123', 'full-width'],
  ['compatibility forms become the plain characters', 'x²', 'x2', 'superscript'],
  ['compatibility forms become the plain characters', '𝐀𝐁', 'ab', 'mathematical bold capitals have no lowercase of their own'],
  ['compatibility forms become the plain characters', 'ｶﾞｽ', 'ガス', 'half-width katakana and its voiced mark'],
  ['other scripts keep their marks, recomposed', 'йошкар', 'йошкар', 'Cyrillic й is not и'],
  ['other scripts keep their marks, recomposed', 'и\u0306ошкар', 'йошкар', 'decomposed й comes back as one character'],
  ['other scripts keep their marks, recomposed', 'ёлка', 'ёлка', 'Cyrillic ё'],
  ['other scripts keep their marks, recomposed', 'हिन्दी', 'हिन्दी', 'Devanagari vowel signs and virama'],
  ['other scripts keep their marks, recomposed', 'ελλάδα', 'ελλάδα', 'Greek keeps its tonos'],
  ['other scripts keep their marks, recomposed', '한국어', '한국어', 'Hangul syllables recomposed after NFKD'],
];
for (const group of new Set(foldings.map(([name]) => name))) {
  t.test(group, async (t) => {
    for (const [, word, folded, why] of foldings.filter(([name]) => name === group)) t.equal(foldForSearch(word), folded, why);
  });
}
