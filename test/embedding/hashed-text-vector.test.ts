import { createHash } from 'node:crypto';
import t from 'tap';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';

const cosine = (a: Float64Array, b: Float64Array): number => a.reduce((sum, value, index) => sum + value * b[index]!, 0);
const sha256 = (vector: Float64Array): string =>
  createHash('sha256').update(Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)).digest('hex');

t.test('vectors of ASCII texts with content words are bit-for-bit those of the ASCII-only analyzer', async (t) => {
  // SHA-256 of the float64 vectors the analyzer of runs of [a-z0-9] gave, computed before Unicode
  // support: collections embedded then keep matching queries embedded now, without re-embedding.
  const before: Array<[text: string, dimension: number, digest: string]> = [
    ['An experimental study of the boundary layer on a heated flat plate at Mach 3.', 384, '15a27e83fc2bf9ac13316c202ef9b406e530d0862a26a974d2af1581a52cf7b4'],
    ['An experimental study of the boundary layer on a heated flat plate at Mach 3.', 128, '070caeb46645836d8058099fa45249b652b66f4626add46db54e2d59c9c0c03b'],
    ['The connection between the pumps failed during testing.', 384, 'd65691393dd569e29f157039b436414eff729c539407ce7b788e35360a39fcd8'],
    ['Supersonic flutter of thin wings, 2nd-order theory (see ref. 12)!', 384, '138e9105512ed6e216b01f06af4ed00c2793ac1ce8d36668115978241b8f7984'],
    ['K9 units: the Kelvin sign \u212A counts as k.', 384, 'b84e6a43e64f95322416fa7ab2a5257f6a274fa80457df5bf8af92c20a9b8104'],
    ['word', 384, '667fff9889c709d6ac342098d8880f5c28db42ffe1aeaaf27644d5313aef976b'],
    ['word', 128, 'd61069604375f877f068e13c51fc8a9ebaecaced8b7fe2c2f6afad91668fdd35'],
  ];
  for (const [text, dimension, digest] of before) t.equal(sha256(hashedTextVector(text, dimension)), digest, `${text} (${dimension})`);
});

t.test('a text without content words gets a vector of its own', async (t) => {
  const the = hashedTextVector('the', 384);
  t.same(hashedTextVector('  The\n', 384), the, 'case and spacing aside, the same text has the same vector');
  for (const other of ['of and', '🍕', '?!', '', 'Le café est bon.', 'Москва — столица России.', '東京都は日本の首都です。']) {
    const similarity = cosine(the, hashedTextVector(other, 384));
    t.ok(Math.abs(similarity) < 0.3, `"the" against "${other}": ${similarity.toFixed(3)}`);
  }
  t.same(hashedTextVector('🍕', 384), hashedTextVector('🍕', 384));
  t.ok(Math.abs(cosine(hashedTextVector('🍕', 384), hashedTextVector('🍔', 384))) < 0.3, 'two emoji are two texts');
});

t.test('texts in other scripts get word, bigram and character n-gram features', async (t) => {
  const capital = hashedTextVector('Москва — столица России и крупнейший город страны.', 384);
  const paraphrase = hashedTextVector('Крупнейшие города России: Москва и Санкт-Петербург.', 384);
  const unrelatedRussian = hashedTextVector('Кошка спит на тёплом подоконнике.', 384);
  const tokyo = hashedTextVector('東京都は日本の首都で、人口が最も多い都市です。', 384);
  const tokyoQuery = hashedTextVector('東京', 384);
  const beijing = hashedTextVector('北京是中华人民共和国的首都。', 384);
  t.ok(cosine(capital, paraphrase) > 0.25, `Russian paraphrase ${cosine(capital, paraphrase).toFixed(3)}`);
  t.ok(Math.abs(cosine(capital, unrelatedRussian)) < 0.1, `unrelated Russian ${cosine(capital, unrelatedRussian).toFixed(3)}`);
  t.ok(cosine(tokyoQuery, tokyo) > cosine(tokyoQuery, beijing) + 0.15, `東京: Tokyo ${cosine(tokyoQuery, tokyo).toFixed(3)}, Beijing ${cosine(tokyoQuery, beijing).toFixed(3)}`);
  t.ok(Math.abs(cosine(capital, tokyo)) < 0.15, 'Russian and Japanese texts share nothing');
  // Accents fold before hashing: "café" and "cafe" are one word.
  t.same(hashedTextVector('Le café du coin', 384), hashedTextVector('le cafe du coin', 384));
});
