/**
 * The best hits of a keyword search, as both indexes rank them: higher score first, equal scores by
 * ascending key.
 */
import type { KeywordHit } from './keyword-index.js';

/** The best `capacity` hits seen: a binary min-heap whose root is the worst kept hit. */
export class TopHits {
  private readonly scores: number[] = [];
  private readonly keys: number[] = [];

  constructor(private readonly capacity: number) {}

  /** Higher score first; equal scores by ascending key. */
  private static ranksAbove(score: number, key: number, otherScore: number, otherKey: number): boolean {
    return score > otherScore || (score === otherScore && key < otherKey);
  }

  /** Whether a hit would be kept: cheap, so callers test it before evaluating a filter. */
  admits(score: number, key: number): boolean {
    return this.scores.length < this.capacity || TopHits.ranksAbove(score, key, this.scores[0], this.keys[0]);
  }

  push(score: number, key: number): void {
    const { scores, keys } = this;
    let index: number;
    if (scores.length < this.capacity) {
      index = scores.length;
      scores.push(score);
      keys.push(key);
      while (index > 0) {
        const parent = (index - 1) >> 1;
        if (!TopHits.ranksAbove(scores[parent], keys[parent], score, key)) break;
        scores[index] = scores[parent];
        keys[index] = keys[parent];
        index = parent;
      }
    } else {
      index = 0;
      for (;;) {
        let worst = 2 * index + 1;
        if (worst >= scores.length) break;
        const right = worst + 1;
        if (right < scores.length && TopHits.ranksAbove(scores[worst], keys[worst], scores[right], keys[right])) worst = right;
        if (!TopHits.ranksAbove(score, key, scores[worst], keys[worst])) break;
        scores[index] = scores[worst];
        keys[index] = keys[worst];
        index = worst;
      }
    }
    scores[index] = score;
    keys[index] = key;
  }

  sorted(): KeywordHit[] {
    return this.keys
      .map((key, index) => ({ key, score: this.scores[index] }))
      .sort((left, right) => right.score - left.score || left.key - right.key);
  }
}
