/**
 * Deterministic English-like corpus for the search benchmark: a fixed vocabulary of 5,000 words
 * (English function words at the top ranks, then pronounceable pseudo-words) drawn with a Zipf
 * distribution, plus topic words per document so that queries have answers. Document `i` is always
 * the same text, whatever else was generated before it, so any prefix of the corpus is reproducible.
 */

/** mulberry32: a small, fast, seedable PRNG (uniform in [0, 1)). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FUNCTION_WORDS = [
  'the', 'of', 'and', 'to', 'a', 'in', 'is', 'that', 'for', 'it', 'as', 'was', 'with', 'be', 'by', 'on', 'not', 'he',
  'this', 'are', 'or', 'his', 'from', 'at', 'which', 'but', 'have', 'an', 'they', 'you', 'were', 'their', 'one', 'all',
  'we', 'can', 'her', 'has', 'there', 'been', 'if', 'more', 'when', 'will', 'would', 'who', 'so', 'no', 'its', 'also',
  'into', 'than', 'other', 'some', 'these', 'may', 'only', 'our', 'such', 'then', 'time', 'two', 'first', 'new', 'over',
  'most', 'after', 'many', 'where', 'between', 'each', 'through', 'under', 'while', 'about', 'used', 'because', 'both',
];

const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z',
  'br', 'cl', 'cr', 'dr', 'fl', 'gr', 'pl', 'pr', 'sl', 'st', 'tr', 'sh', 'ch', 'th', 'qu', 'sp', 'bl'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'a', 'e', 'i', 'o', 'ai', 'ea', 'ou', 'io', 'ee'];
const CODAS = ['', '', '', 'n', 'r', 's', 't', 'l', 'm', 'nd', 'st', 'ck', 'ng', 'rt', 'x'];
const SUFFIXES = ['', '', '', '', '', 'tion', 'ment', 'ing', 'er', 'ly', 'al', 'ness', 'ity', 'ive', 'ous', 'ed'];

export const VOCABULARY_SIZE = 5000;
export const TOPIC_COUNT = 1000;
const TOPIC_WORDS_PER_TOPIC = 4;
/** Zipf exponent (natural language is about 1). */
const ZIPF_EXPONENT = 1.05;
/** Chance that a body word is one of the document's topic words. */
const TOPIC_WORD_RATE = 0.06;

function buildVocabulary(): string[] {
  const random = seededRandom(20240601);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const words = [...FUNCTION_WORDS];
  const seen = new Set(words);
  while (words.length < VOCABULARY_SIZE) {
    const syllables = 1 + Math.floor(random() * 3);
    let word = '';
    for (let index = 0; index < syllables; index++) word += pick(ONSETS) + pick(VOWELS) + (index === syllables - 1 ? pick(CODAS) : '');
    word += pick(SUFFIXES);
    if (word.length < 3 || word.length > 14 || seen.has(word)) continue;
    seen.add(word);
    words.push(word);
  }
  return words;
}

export const vocabulary = buildVocabulary();

/** Cumulative Zipf probabilities over vocabulary ranks. */
const zipfCdf = (() => {
  const weights = vocabulary.map((_, rank) => 1 / (rank + 1) ** ZIPF_EXPONENT);
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const cdf = new Float64Array(weights.length);
  let running = 0;
  weights.forEach((weight, rank) => {
    running += weight / total;
    cdf[rank] = running;
  });
  return cdf;
})();

function zipfRank(random: () => number, minimumRank = 0): number {
  for (;;) {
    const u = random();
    let low = 0;
    let high = zipfCdf.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (zipfCdf[middle]! < u) low = middle + 1;
      else high = middle;
    }
    if (low >= minimumRank) return low;
  }
}

/** Each topic: a few mid- and low-frequency words (ranks 400-4999), disjoint across topics where possible. */
export const topics: string[][] = (() => {
  const random = seededRandom(777);
  const result: string[][] = [];
  for (let topic = 0; topic < TOPIC_COUNT; topic++) {
    const words = new Set<string>();
    while (words.size < TOPIC_WORDS_PER_TOPIC) words.add(vocabulary[400 + Math.floor(random() * (VOCABULARY_SIZE - 400))]!);
    result.push([...words]);
  }
  return result;
})();

export function topicOfDocument(index: number): number {
  return Math.floor(seededRandom(index * 2654435761 + 17)() * TOPIC_COUNT);
}

function sentence(random: () => number, topicWords: string[]): string {
  const length = 6 + Math.floor(random() * 12);
  const words: string[] = [];
  for (let index = 0; index < length; index++) {
    words.push(random() < TOPIC_WORD_RATE ? topicWords[Math.floor(random() * topicWords.length)]! : vocabulary[zipfRank(random)]!);
  }
  if (length > 10 && random() < 0.3) words[3 + Math.floor(random() * (length - 6))] += ',';
  const text = words.join(' ');
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

/** Document `index`: a title line and paragraphs of sentences, ~2 KB (1,800-2,200 characters). */
export function documentText(index: number): string {
  const random = seededRandom(index + 1_000_003);
  const topicWords = topics[topicOfDocument(index)]!;
  const target = 1800 + Math.floor(random() * 400);
  const title = [topicWords[0]!, vocabulary[zipfRank(random, 100)]!, topicWords[1]!].join(' ');
  const paragraphs: string[] = [];
  let length = title.length;
  while (length < target) {
    const sentences: string[] = [];
    const count = 3 + Math.floor(random() * 4);
    for (let index = 0; index < count && length < target; index++) {
      const next = sentence(random, topicWords);
      sentences.push(next);
      length += next.length + 1;
    }
    paragraphs.push(sentences.join(' '));
    length += 2;
  }
  return `${title[0]!.toUpperCase()}${title.slice(1)}\n\n${paragraphs.join('\n\n')}\n`;
}

/**
 * A fixed list of 2-4 word queries: one or two words of a topic plus zero to two content words
 * (Zipf-drawn, function words excluded), shuffled.
 */
export function benchmarkQueries(count: number, seed = 4242): string[] {
  const random = seededRandom(seed);
  const queries: string[] = [];
  while (queries.length < count) {
    const topicWords = topics[Math.floor(random() * TOPIC_COUNT)]!;
    const words = new Set<string>();
    const fromTopic = 1 + Math.floor(random() * 2);
    while (words.size < fromTopic) words.add(topicWords[Math.floor(random() * topicWords.length)]!);
    const total = Math.max(2, fromTopic + Math.floor(random() * 3));
    while (words.size < total) words.add(vocabulary[zipfRank(random, FUNCTION_WORDS.length)]!);
    const list = [...words];
    for (let index = list.length - 1; index > 0; index--) {
      const other = Math.floor(random() * (index + 1));
      [list[index], list[other]] = [list[other]!, list[index]!];
    }
    queries.push(list.join(' '));
  }
  return queries;
}
