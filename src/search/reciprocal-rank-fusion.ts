export interface RankedList<K> {
  keys: readonly K[];
  weight: number;
}

export interface FusedHit<K> {
  key: K;
  /** Weighted RRF sum scaled so that rank 1 in every list is 1.0 (api-contract 5). */
  score: number;
  /** 1-based rank in each input list, or null when absent from it. */
  ranks: (number | null)[];
}

/**
 * Reciprocal rank fusion: score(d) = Σ w_i / (k + rank_i(d)), divided by Σ w_i / (k + 1) so the
 * best possible document scores 1. Ties keep the order of first appearance.
 */
export function reciprocalRankFusion<K>(lists: readonly RankedList<K>[], k = 60): FusedHit<K>[] {
  const maximum = lists.reduce((sum, list) => sum + list.weight / (k + 1), 0);
  const fused = new Map<K, FusedHit<K>>();
  lists.forEach((list, listIndex) => {
    // A list weighted 0 is switched off: its documents must not appear with a score of 0.
    if (list.weight <= 0) return;
    list.keys.forEach((key, position) => {
      let hit = fused.get(key);
      if (!hit) {
        hit = { key, score: 0, ranks: lists.map(() => null) };
        fused.set(key, hit);
      }
      if (hit.ranks[listIndex] !== null) return;
      hit.ranks[listIndex] = position + 1;
      hit.score += list.weight / (k + position + 1);
    });
  });
  const hits = [...fused.values()];
  if (maximum > 0) for (const hit of hits) hit.score /= maximum;
  return hits.sort((a, b) => b.score - a.score);
}
