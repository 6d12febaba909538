import t from 'tap';
import { tokenize } from '../../src/text/english-analyzer.js';
import { unicodeTokens } from '../../src/text/unicode-tokenizer.js';

t.test('Chinese and Japanese runs become overlapping character bigrams', async (t) => {
  t.same(unicodeTokens('東京都'), ['東京', '京都']);
  t.same(unicodeTokens('東'), ['東'], 'a lone character is its own token');
  t.same(unicodeTokens('中文分词很难'), ['中文', '文分', '分词', '词很', '很难']);
  // One run across kanji, hiragana and katakana, as in Lucene's CJKBigramFilter.
  t.same(unicodeTokens('東京タワー'), ['東京', '京タ', 'タワ', 'ワー'], 'the long-vowel mark stays in the run');
  t.same(unicodeTokens('人々'), ['人々'], 'the iteration mark stays in the run');
  t.same(unicodeTokens('東京。大阪、京都・奈良'), ['東京', '大阪', '京都', '奈良'], 'CJK punctuation separates runs');
  t.same(unicodeTokens('𠀋𠀌𠀍'), ['𠀋𠀌', '𠀌𠀍'], 'characters outside the BMP count as one each');
});

t.test('a Chinese or Japanese run stops where another script starts', async (t) => {
  t.same(unicodeTokens('2020年東京オリンピック'), ['2020', '年東', '東京', '京オ', 'オリ', 'リン', 'ンピ', 'ピッ', 'ック']);
  t.same(unicodeTokens('iphone用户'), ['iphone', '用户']);
  t.same(unicodeTokens('서울은 한국의 수도'), ['서울', '울은', '한국', '국의', '수도'], 'Korean: bigrams, so a word is found with its particle attached');
  t.same(unicodeTokens('서울에서 k팝'), ['서울', '울에', '에서', 'k', '팝'], 'a Korean run stops where Latin starts');
  t.same(unicodeTokens('ภาษาไทย'), ['ภา', 'าษ', 'ษา', 'าไ', 'ไท', 'ทย'], 'Thai, written without spaces: code-point bigrams');
  t.same(unicodeTokens('ខ្មែរ'), ['ខ្', '្ម', 'មែ', 'ែរ'], 'Khmer likewise, its marks included');
});

t.test('letters and digits of any script make tokens; symbols and punctuation separate them', async (t) => {
  t.same(unicodeTokens('москва — столица россии.'), ['москва', 'столица', 'россии']);
  t.same(unicodeTokens('हिन्दी भाषा।'), ['हिन्दी', 'भाषा'], 'combining vowel signs stay inside the word');
  t.same(unicodeTokens('مرحبا بالعالم'), ['مرحبا', 'بالعالم']);
  t.same(unicodeTokens('pizza 🍕 party™ 👍🏽'), ['pizza', 'party']);
  t.same(unicodeTokens('½ cup'), ['1', '2', 'cup'], 'folding "½" to "1⁄2" brings in a separator');
  t.same(unicodeTokens('\u0301abc'), ['abc'], 'a combining mark does not start a token');
});

t.test('mixed scripts in one text keep their order', async (t) => {
  t.same(tokenize('Le Café de Paris, Москва and 東京都: résumé 5'), ['le', 'cafe', 'de', 'paris', 'москва', 'and', '東京', '京都', 'resume', '5']);
});

t.test('on ASCII text it gives exactly the tokens of the ASCII path', async (t) => {
  const texts = [
    "The connections were being TESTED, and the tester's resume says ECOLE 2nd-order flows!",
    'an experimental study of a wing-body combination at mach 1.41 (ref. 12; x_1 = 0.5)',
    'snake_case, CamelCase, e-mail@example.com, 3.14159, #tag',
  ];
  for (const text of texts) t.same(unicodeTokens(text.toLowerCase()), tokenize(text), text);
});
