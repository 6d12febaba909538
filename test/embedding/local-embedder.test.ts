import t from 'tap';
import { fnvHashString, fnvOffsetBasis, mixHash } from '../../plugins/embedding/local/fnv1a-hash.js';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';

const cosine = (a: Float32Array, b: Float32Array): number => a.reduce((sum, value, index) => sum + value * b[index]!, 0);
const norm = (a: Float32Array): number => Math.sqrt(cosine(a, a));

t.test('FNV-1a matches the published 32-bit test vectors', async (t) => {
  // From the FNV reference test suite (draft-eastlake-fnv): "" "a" "foobar".
  t.equal(fnvHashString(fnvOffsetBasis, '') >>> 0, 0x811c9dc5);
  t.equal(fnvHashString(fnvOffsetBasis, 'a') >>> 0, 0xe40c292c);
  t.equal(fnvHashString(fnvOffsetBasis, 'foobar') >>> 0, 0xbf9cf968);
  t.equal(mixHash(0), 0, 'fmix32(0) = 0');
  t.not(mixHash(1), mixHash(2));
});

t.test('plugin definition and model identity', async (t) => {
  t.equal(localEmbeddingPlugin.kind, 'embedding');
  t.equal(localEmbeddingPlugin.name, 'local');
  const model = localEmbeddingPlugin.create({}, {});
  t.equal(model.provider, 'local');
  t.equal(model.model, 'local-hash-384');
  t.equal(model.dimension, 384);

  const small = localEmbeddingPlugin.create({ dimension: 128 }, {});
  t.equal(small.dimension, 128);
  t.equal(small.model, 'local-hash-128');
  const { vectors } = await small.embed(['boundary layer'], 'document');
  t.equal(vectors[0].length, 128);

  t.throws(() => localEmbeddingPlugin.create({ dimension: 0 }, {}), RangeError);
  t.throws(() => localEmbeddingPlugin.create({ dimension: 12.5 }, {}), RangeError);
});

t.test('vectors are 384-dimensional, unit length, free and in input order', async (t) => {
  const model = localEmbeddingPlugin.create({}, {});
  const texts = ['Heat transfer in a laminar boundary layer.', 'Supersonic flutter of thin wings.', '', 'the of and'];
  const result = await model.embed(texts, 'document');
  t.equal(result.tokens, 0);
  t.equal(result.vectors.length, 4);
  for (const vector of result.vectors) {
    t.equal(vector.length, 384);
    // Unit length in float64, then rounded to float32 (~6e-8 relative per coordinate).
    t.ok(Math.abs(norm(vector) - 1) < 1e-6, 'unit norm');
    t.ok(vector.every(Number.isFinite), 'finite');
  }
  // Texts without content words get a unit vector of their own, never a zero vector (no NaN cosines).
  t.ok(Math.abs(cosine(result.vectors[2]!, result.vectors[3]!)) < 0.3, 'two such texts are not one vector');
  const single = await model.embed([texts[1]], 'document');
  t.same(single.vectors[0], result.vectors[1], 'a text embeds the same alone or in a batch');
});

t.test('deterministic across calls, instances and purposes', async (t) => {
  const text = 'An experimental study of the boundary layer on a heated flat plate at Mach 3.';
  const first = (await localEmbeddingPlugin.create({}, {}).embed([text], 'document')).vectors[0];
  const second = (await localEmbeddingPlugin.create({}, {}).embed([text], 'document')).vectors[0];
  const asQuery = (await localEmbeddingPlugin.create({}, {}).embed([text], 'query')).vectors[0];
  t.same(first, second);
  t.same(first, asQuery);
  // Pin a few coordinates so a change to hashing or weighting cannot pass silently
  // (113 of the 384 coordinates are non-zero for this text).
  t.equal(first.filter((value) => value !== 0).length, 113);
  t.same([4, 9, 17].map((index) => Number(first[index].toFixed(6))), [-0.042527, 0.183024, 0.042527]);
});

t.test('paraphrases and morphological variants score above unrelated texts', async (t) => {
  const model = localEmbeddingPlugin.create({}, {});
  const [query, paraphrase, variant, unrelated, otherTopic] = (
    await model.embed(
      [
        'The connection between the pumps failed during testing.',
        'Pump connections fail when they are tested.',
        'Testing showed the pump was connected incorrectly.',
        'Bananas are rich in potassium and taste sweet.',
        'The stock market rallied after the central bank announcement.',
      ],
      'document',
    )
  ).vectors;
  t.ok(cosine(query, paraphrase) > 0.6, `paraphrase ${cosine(query, paraphrase).toFixed(3)}`);
  t.ok(cosine(query, variant) > 0.4, `variant ${cosine(query, variant).toFixed(3)}`);
  t.ok(cosine(query, paraphrase) > cosine(query, unrelated) + 0.4);
  t.ok(Math.abs(cosine(query, unrelated)) < 0.15, `unrelated ${cosine(query, unrelated).toFixed(3)}`);
  t.ok(Math.abs(cosine(query, otherTopic)) < 0.15, `other topic ${cosine(query, otherTopic).toFixed(3)}`);

  // Character n-grams connect forms the stemmer keeps apart ("analyse" → analys, "analysis" → analysi).
  const [analyse, analysis, bananas] = (
    await model.embed(['We analyse the data', 'The analysis of data', 'Bananas taste sweet'], 'document')
  ).vectors;
  t.ok(cosine(analyse, analysis) > 0.35, `analyse/analysis ${cosine(analyse, analysis).toFixed(3)}`);
  t.ok(cosine(analyse, analysis) > cosine(analyse, bananas) + 0.3);
});

t.test('batches embedded on worker threads equal texts embedded in place', async (t) => {
  const model = localEmbeddingPlugin.create({}, {});
  const texts = Array.from({ length: 40 }, (_, n) => `Report ${n} on boundary layer transition, heat flux ${n * 7} and wing flutter.`);
  const batch = await model.embed(texts, 'document');
  t.equal(batch.vectors.length, texts.length);
  const [concurrentA, concurrentB] = await Promise.all([model.embed(texts.slice(0, 20), 'document'), model.embed(texts.slice(20), 'document')]);
  t.same([...concurrentA.vectors, ...concurrentB.vectors], batch.vectors, 'concurrent batches come back in their own order');
  for (const index of [0, 17, 39]) {
    const alone = await model.embed([texts[index]!], 'query');
    t.same(alone.vectors[0], batch.vectors[index], `text ${index}: bit-identical to the in-place embedding`);
  }
});
