/**
 * The fusion itself, beside the HTTP tests of hybrid and /v1/query that rank through it: what it
 * does with inputs those rarely give it (a key listed twice in one list, a list weighted 0, ties).
 */
import t from 'tap';
import { reciprocalRankFusion } from '../../src/search/reciprocal-rank-fusion.js';

t.test('a key listed twice in one list counts once, at its first rank', async (t) => {
  const fused = reciprocalRankFusion([{ keys: ['a', 'b', 'a'], weight: 1 }, { keys: ['b', 'a'], weight: 1 }], 60);
  const a = fused.find((hit) => hit.key === 'a')!;
  t.same(a.ranks, [1, 2]);
  t.equal(a.score, (1 / 61 + 1 / 62) / (2 / 61));
  t.same(fused.map((hit) => hit.key), ['a', 'b'], 'b scores the same and keeps its later first appearance');
});

t.test('rank 1 in every list scores 1; a list weighted 0 adds nothing and no key of its own', async (t) => {
  const fused = reciprocalRankFusion([{ keys: ['x', 'y'], weight: 2 }, { keys: ['x', 'z'], weight: 0 }], 10);
  t.same(fused.map((hit) => [hit.key, hit.score]), [['x', 1], ['y', (2 / 12) / (2 / 11)]]);
  t.same(reciprocalRankFusion([{ keys: ['x'], weight: 0 }]), [], 'only lists weighted 0: nothing');
});
