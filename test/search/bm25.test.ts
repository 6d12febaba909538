import t from 'tap';
import { Bm25Index, bm25Idf, bm25TermWeight, bm25WeightForIdf } from '../../src/search/bm25.js';

// Expected numbers below were printed by /work/shared/tools/bm25_eval.py's BM25 class.

t.test('idf is the Lucene form ln(1 + (N - df + 0.5) / (df + 0.5))', async (t) => {
  t.ok(Math.abs(bm25Idf(1, 10) - 1.992430164690206) < 1e-12);
  // A term in every document still has a (small) positive idf, unlike Robertson's original form.
  t.ok(Math.abs(bm25Idf(10, 10) - 0.04652001563489291) < 1e-12);
  t.ok(bm25Idf(10, 10) > 0);
  t.ok(bm25Idf(2, 10) < bm25Idf(1, 10), 'rarer terms weigh more');
});

t.test('term weight applies k1 = 0.9 and b = 0.4 by default', async (t) => {
  const averageDocument = { termFrequency: 2, documentLength: 10, averageDocumentLength: 10, documentFrequency: 1, documentCount: 10 };
  t.ok(Math.abs(bm25TermWeight(averageDocument) - 2.610770560628546) < 1e-12);
  // A document twice the average length: 1.9924 * 2 * 1.9 / (2 + 0.9 * (0.6 + 0.4 * 2)).
  t.ok(Math.abs(bm25TermWeight({ ...averageDocument, documentLength: 20 }) - 2.322464609148093) < 1e-12);
  t.equal(bm25TermWeight({ ...averageDocument, termFrequency: 0 }), 0);
  // b = 0 turns length normalisation off; explicit k1 = 0.9 equals the default.
  t.equal(bm25TermWeight({ ...averageDocument, documentLength: 20, b: 0 }), bm25TermWeight({ ...averageDocument, b: 0 }));
  t.equal(bm25TermWeight({ ...averageDocument, k1: 0.9, b: 0.4 }), bm25TermWeight(averageDocument));
  // tf saturates: the weight is bounded by idf * (k1 + 1).
  t.ok(bm25TermWeight({ ...averageDocument, termFrequency: 1000 }) < bm25Idf(1, 10) * 1.9);
});

t.test('a weight from an idf computed once per term is the per-posting weight, bit for bit', async (t) => {
  t.ok(Math.abs(bm25WeightForIdf(bm25Idf(1, 10), 2, 10, 10, 0.9, 0.4) - 2.610770560628546) < 1e-12);
  // Expected weights computed by the reference script's arithmetic (bm25_eval.py, BM25.search).
  for (const [termFrequency, documentLength, averageDocumentLength, documentFrequency, documentCount, k1, b, expected] of [
    [1, 7, 41.3, 3, 1400, 0.9, 0.4, 7.111192235613463],
    [5, 120, 41.3, 900, 1400, 1.2, 0.75, 0.6142637728772633],
    [2, 1, 1, 1, 1, 0, 1, 0.28768207245178085],
  ]) {
    const weight = bm25WeightForIdf(bm25Idf(documentFrequency, documentCount), termFrequency, documentLength, averageDocumentLength, k1, b);
    t.ok(Math.abs(weight - expected) < 1e-12, `weight ${weight} against the reference ${expected}`);
    t.equal(weight, bm25TermWeight({ termFrequency, documentLength, averageDocumentLength, documentFrequency, documentCount, k1, b }));
  }
});

t.test('Bm25Index ranks like the reference script', async (t) => {
  const index = new Bm25Index();
  index.add('d1', 'Boundary layer flows over heated plates.');
  index.add('d2', 'Heat transfer in laminar boundary layers; the boundary layer thickens.');
  index.add('d3', 'Supersonic aircraft wings flutter.');
  index.add('d4', 'Wings of aircraft at supersonic speed.');
  index.add('d5', 'A note on the theory of flutter.');
  t.equal(index.size, 5);

  const close = (actual: number, expected: number): boolean => Math.abs(actual - expected) < 1e-12;
  const boundary = index.search('boundary layer', 10);
  t.same(boundary.map((hit) => hit.id), ['d2', 'd1']);
  t.ok(close(boundary[0].score, 2.118968918436191) && close(boundary[1].score, 1.7372225597623077), 'scores');

  // Equal scores are ordered by id, as the script sorts by (-score, id).
  const supersonic = index.search('supersonic aircraft', 10);
  t.same(supersonic.map((hit) => hit.id), ['d3', 'd4']);
  t.equal(supersonic[0].score, supersonic[1].score);

  // A repeated query term counts once per repetition.
  const repeated = index.search('heated boundary boundary', 10);
  t.same(repeated.map((hit) => hit.id), ['d2', 'd1']);
  t.ok(close(repeated[0].score, 2.8962542459933918));

  t.same(index.search('flutter', 1).map((hit) => hit.id), ['d5']);
  t.same(index.search('nothing here', 10), []);
  t.same(index.search('flutter', 0), []);
  t.same(new Bm25Index().search('flutter', 10), []);
});
