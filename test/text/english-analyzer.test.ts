import t from 'tap';
import { stemmer } from 'stemmer';
import { analyzeForIndex, stemToken, tokenize } from '../../src/text/english-analyzer.js';
import { englishStopWords } from '../../src/text/english-stop-words.js';
import { porterStem } from '../../src/text/porter-stemmer.js';

const sentence = 'The connections were being TESTED, and the tester’s résumé says ÉCOLE 2nd-order flows!';

t.test('tokenize lowercases and keeps runs of [a-z0-9], like the reference script', async (t) => {
  // Expected values printed by re.findall(r"[a-z0-9]+", text.lower()) in Python.
  t.same(tokenize(sentence), [
    'the', 'connections', 'were', 'being', 'tested', 'and', 'the', 'tester', 's', 'r', 'sum', 'says', 'cole', '2nd', 'order', 'flows',
  ]);
  t.same(tokenize(''), []);
  t.same(tokenize('  ...  '), []);
  t.same(tokenize('abc'), ['abc']);
  // U+212A KELVIN SIGN lowercases to ASCII "k" in both Python and JavaScript.
  t.same(tokenize('\u212A9'), ['k9']);
});

t.test('analyzeForIndex drops stop words and Porter-stems, like bm25_eval.py --stem', async (t) => {
  // Expected value printed by BM25(stem=True).tokenize(sentence) in the reference script.
  t.same(analyzeForIndex(sentence), ['connect', 'test', 'tester', 's', 'r', 'sum', 'sai', 'cole', '2nd', 'order', 'flow']);
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
    t.equal(stemToken(word), stem, `${word} (cached)`);
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
