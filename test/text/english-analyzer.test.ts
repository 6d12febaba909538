import t from 'tap';
import { stemmer } from 'stemmer';
import { analyzeForIndex, indexTerm, tokenize } from '../../src/text/english-analyzer.js';
import { englishStopWords } from '../../src/text/english-stop-words.js';
import { porterStem } from '../../src/text/porter-stemmer.js';

const sentence = "The connections were being TESTED, and the tester's resume says ECOLE 2nd-order flows!";

t.test('tokenize lowercases ASCII text and keeps runs of [a-z0-9], like the reference script', async (t) => {
  // Expected values printed by re.findall(r"[a-z0-9]+", text.lower()) in Python.
  t.same(tokenize(sentence), [
    'the', 'connections', 'were', 'being', 'tested', 'and', 'the', 'tester', 's', 'resume', 'says', 'ecole', '2nd', 'order', 'flows',
  ]);
  t.same(tokenize(''), []);
  t.same(tokenize('  ...  '), []);
  t.same(tokenize('abc'), ['abc']);
  // U+212A KELVIN SIGN lowercases to ASCII "k" in both Python and JavaScript.
  t.same(tokenize('\u212A9'), ['k9']);
  t.same(tokenize('\u212Aelvin \u212A9 units'), tokenize('kelvin k9 units'));
});

t.test('a non-ASCII character elsewhere in the text leaves the ASCII words as they were', async (t) => {
  // Typographic quotes, dashes and no-break spaces send real-world English down the Unicode path.
  const ascii = tokenize(sentence);
  t.same(tokenize(`\u201C${sentence}\u201D`), ascii);
  t.same(tokenize(sentence.replaceAll(' ', '\u00A0')), ascii);
  t.same(tokenize(sentence.replace("tester's", 'tester\u2019s').replace('2nd-order', '2nd\u2013order')), ascii);
  t.same(tokenize('under_score a+b=c \u2014 x'), ['under', 'score', 'a', 'b', 'c', 'x'], 'ASCII separators still separate');
});

t.test('accented Latin words are folded to the ASCII word, then treated as English', async (t) => {
  t.same(tokenize('Café CAFÉ cafe\u0301 résumé naïve Straße'), ['cafe', 'cafe', 'cafe', 'resume', 'naive', 'strasse']);
  // The old analyzer split "résumé" into "r" + "sum", so it matched "the sum total".
  t.same(analyzeForIndex('Résumés of the naïve cafés'), analyzeForIndex('resumes of the naive cafes'));
  t.same(analyzeForIndex('Résumés of the naïve cafés'), ['resum', 'naiv', 'cafe']);
  t.same(analyzeForIndex('STRASSE Straße strasse'), ['strass', 'strass', 'strass']);
  // Folding comes before the stop-word list, as in Lucene's lowercase → asciifolding → stop chains,
  // so French "thé" (tea) reads as "the": the price of matching "cafe" to "café".
  t.same(analyzeForIndex('Thé'), []);
});

t.test('tokens of other scripts are kept whole: no English stop words, no Porter stemming', async (t) => {
  t.same(analyzeForIndex('Москва — столица России и крупнейший город'), ['москва', 'столица', 'россии', 'и', 'крупнейший', 'город']);
  t.same(analyzeForIndex('東京都に住む'), ['東京', '京都', '都に', 'に住', '住む']);
  // Porter would cut the "s" of an ASCII word; a Greek-Latin mix is not English.
  t.same(analyzeForIndex('alphas αlphas'), ['alpha', 'αlphas']);
  t.same(analyzeForIndex('the 🍕 and ?!'), [], 'emoji and punctuation are not words');
  t.equal(indexTerm('the'), undefined);
  t.equal(indexTerm('connections'), 'connect');
  t.equal(indexTerm('москва'), 'москва');
});

t.test('analyzeForIndex drops stop words and Porter-stems, like bm25_eval.py --stem', async (t) => {
  // Expected value printed by BM25(stem=True).tokenize(sentence) in the reference script.
  t.same(analyzeForIndex(sentence), ['connect', 'test', 'tester', 's', 'resum', 'sai', 'ecol', '2nd', 'order', 'flow']);
  t.same(analyzeForIndex('the and of'), []);
});

t.test('stop-word list is the script’s 126 words', async (t) => {
  t.equal(englishStopWords.size, 126);
  for (const word of ['a', 'the', 'yourselves', 'whom', 'doing']) t.ok(englishStopWords.has(word), word);
  for (const word of ['computer', 'flow', 'upon', 'also']) t.notOk(englishStopWords.has(word), word);
});

t.test('Porter stems match the reference script', async (t) => {
  // Printed by the script's Porter().stem(); includes the examples of Porter's 1980 paper.
  const expected: Record<string, string> = {
    caresses: 'caress', ponies: 'poni', ties: 'ti', caress: 'caress', cats: 'cat', feed: 'feed', agreed: 'agre',
    plastered: 'plaster', bled: 'bled', motoring: 'motor', sing: 'sing', conflated: 'conflat', troubled: 'troubl',
    sized: 'size', hopping: 'hop', tanned: 'tan', falling: 'fall', hissing: 'hiss', fizzed: 'fizz', failing: 'fail',
    filing: 'file', happy: 'happi', sky: 'sky', relational: 'relat', conditional: 'condit', rational: 'ration',
    digitizer: 'digit', radically: 'radic', differently: 'differ', vietnamization: 'vietnam', predication: 'predic',
    operator: 'oper', feudalism: 'feudal', decisiveness: 'decis', hopefulness: 'hope', callousness: 'callous',
    formality: 'formal', sensitivity: 'sensit', sensibility: 'sensibl', triplicate: 'triplic', formative: 'form',
    formalize: 'formal', electricity: 'electr', electrical: 'electr', hopeful: 'hope', goodness: 'good',
    revival: 'reviv', allowance: 'allow', inference: 'infer', airliner: 'airlin', gyroscopic: 'gyroscop',
    adjustable: 'adjust', defensible: 'defens', irritant: 'irrit', replacement: 'replac', adjustment: 'adjust',
    dependent: 'depend', adoption: 'adopt', communism: 'commun', activate: 'activ', effective: 'effect',
    bowdlerize: 'bowdler', probate: 'probat', rate: 'rate', cease: 'ceas', controlling: 'control', roll: 'roll',
    yes: 'ye', eyes: 'ey', by: 'by', aerodynamic: 'aerodynam', boundary: 'boundari', layers: 'layer',
  };
  for (const [word, stem] of Object.entries(expected)) {
    t.equal(porterStem(word), stem, word);
    if (!englishStopWords.has(word)) t.equal(indexTerm(word), stem, `${word} (cached)`);
  }
});

t.test('the script’s Porter differs from the stemmer package on bli/logi words, and we follow the script', async (t) => {
  // These are the 9 Cranfield words where the packages disagree; the script keeps the 1980 rules.
  const scriptStems: Record<string, string> = {
    possibly: 'possibli', assembly: 'assembli', technology: 'technologi', terminology: 'terminologi', analogy: 'analogi',
  };
  for (const [word, stem] of Object.entries(scriptStems)) {
    t.equal(porterStem(word), stem, word);
    t.not(stemmer(word), stem, `stemmer package differs on ${word}`);
  }
});

t.test('stems stay correct after the stem cache evicts entries', async (t) => {
  // 60,000 distinct tokens overflow the 50,000-entry cache.
  const words = Array.from({ length: 60_000 }, (_, index) => `flows${index.toString(36)}ing`);
  analyzeForIndex('connections ' + words.join(' '));
  t.same(analyzeForIndex('connections flowing'), ['connect', 'flow']);
});
