/**
 * An offline text vector by signed feature hashing ("the hashing trick", Weinberger et al. 2009).
 *
 * Three feature families, each counted separately:
 *   - unigrams: the analyzer's terms (src/text/english-analyzer.ts), so "connected" and
 *     "connection" meet, as do "café" and "cafe"; Chinese and Japanese terms are character bigrams;
 *   - bigrams of consecutive terms, so word order counts a little;
 *   - character 3-5-grams of each content word padded as "<word>" (fastText's subwords), so
 *     variants the stemmer misses ("analyse"/"analysis", typos, compounds, and the inflections of
 *     languages the analyzer does not stem, "Москва"/"Москве") still overlap.
 * Each feature weighs 1 + ln(tf) (sublinear: a word said ten times is not ten times the topic),
 * no idf (a local model sees one text at a time, never the collection).
 *
 * Families are L2-normalised separately, then scaled by `familyWeights`, so a long word's ~20
 * n-grams cannot drown its one unigram. Unigrams carry most weight; character n-grams least,
 * because English shares many of them by chance ("ing", "tio"): with these weights, unrelated
 * texts land near 0 (|cos| < 0.15 in the tests, ~0.05 typically) while paraphrases sharing
 * stems score ~0.5-0.8.
 *
 * Each feature adds ±weight to one of `dimension` buckets; the sign comes from one hash bit, so
 * collisions cancel on average instead of piling up (the expected dot product stays unbiased).
 */
import { indexTerm, tokenize } from '../../../src/text/english-analyzer.js';
import { fnvHashString, fnvOffsetBasis, fnvStep, mixHash } from './fnv1a-hash.js';

export const familyWeights = { unigram: 1, bigram: 0.5, characterNgram: 0.6 } as const;

const shortestCharacterNgram = 3;
const longestCharacterNgram = 5;
const wordStartMarker = 0x3c; // '<'
const wordEndMarker = 0x3e; // '>'
const bigramSeparator = 0x20; // ' '

// Distinct seeds keep the families apart: the unigram "ion" and the character 3-gram "ion"
// must not be one feature.
const unigramSeed = fnvStep(fnvOffsetBasis, 0x55); // 'U'
const bigramSeed = fnvStep(fnvOffsetBasis, 0x42); // 'B'
const characterNgramSeed = fnvStep(fnvOffsetBasis, 0x43); // 'C'
const wordlessTextSeed = fnvStep(fnvOffsetBasis, 0x45); // 'E'

type FeatureCounts = Map<number, number>;

/**
 * The one feature of a text with no content word ("the", "?!", "🍕", ""), so it still gets a unit
 * vector (no NaN cosines). It is the hash of the text itself, case and spacing aside: one feature
 * shared by all such texts made "the" score 1.0 against every other one, and so against any
 * document the analyzer found no word in. "" hashes to the seed alone, the feature every such text
 * had before, so stored vectors of empty chunks stay valid.
 */
function wordlessTextFeature(text: string): number {
  return fnvHashString(wordlessTextSeed, text.toLowerCase().replace(/\s+/g, ' ').trim());
}

function countFeature(counts: FeatureCounts, hash: number): void {
  counts.set(hash, (counts.get(hash) ?? 0) + 1);
}

function countCharacterNgrams(counts: FeatureCounts, word: string): void {
  // Positions run over "<" + word + ">"; -1 and word.length are the markers.
  const last = word.length;
  const codeAt = (position: number): number =>
    position < 0 ? wordStartMarker : position === last ? wordEndMarker : word.charCodeAt(position);
  for (let start = -1; start <= last - shortestCharacterNgram + 1; start++) {
    let hash = characterNgramSeed;
    for (let length = 1; length <= longestCharacterNgram && start + length - 1 <= last; length++) {
      hash = fnvStep(hash, codeAt(start + length - 1));
      if (length >= shortestCharacterNgram) countFeature(counts, hash);
    }
  }
}

function addFamily(vector: Float64Array, counts: FeatureCounts, familyWeight: number): void {
  let squaredNorm = 0;
  for (const count of counts.values()) {
    const weight = 1 + Math.log(count);
    squaredNorm += weight * weight;
  }
  if (squaredNorm === 0) return;
  const scale = familyWeight / Math.sqrt(squaredNorm);
  const dimension = vector.length;
  for (const [feature, count] of counts) {
    const mixed = mixHash(feature);
    const sign = mixed & 0x80000000 ? -1 : 1;
    vector[(mixed & 0x7fffffff) % dimension] += sign * scale * (1 + Math.log(count));
  }
}

/** The unit-length hashed vector of `text` in `dimension` buckets. */
export function hashedTextVector(text: string, dimension: number): Float64Array {
  const unigrams: FeatureCounts = new Map();
  const bigrams: FeatureCounts = new Map();
  const characterNgrams: FeatureCounts = new Map();
  let previousTerm: string | undefined;
  for (const word of tokenize(text)) {
    const term = indexTerm(word);
    if (term === undefined) continue;
    countFeature(unigrams, fnvHashString(unigramSeed, term));
    if (previousTerm !== undefined) {
      countFeature(bigrams, fnvHashString(fnvStep(fnvHashString(bigramSeed, previousTerm), bigramSeparator), term));
    }
    previousTerm = term;
    countCharacterNgrams(characterNgrams, word);
  }

  const vector = new Float64Array(dimension);
  if (unigrams.size === 0) countFeature(unigrams, wordlessTextFeature(text));
  addFamily(vector, unigrams, familyWeights.unigram);
  addFamily(vector, bigrams, familyWeights.bigram);
  addFamily(vector, characterNgrams, familyWeights.characterNgram);

  let squaredNorm = 0;
  for (let index = 0; index < dimension; index++) squaredNorm += vector[index] * vector[index];
  const inverseNorm = 1 / Math.sqrt(squaredNorm);
  for (let index = 0; index < dimension; index++) vector[index] *= inverseNorm;
  return vector;
}
