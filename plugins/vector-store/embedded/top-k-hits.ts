/**
 * The k best (key, score) pairs seen so far, in a binary min-heap keyed on score: an exact scan of
 * n rows costs O(n log k) and the heap's root is the score a new row must beat. Equal scores are
 * ordered by key so results are deterministic.
 */
import type { VectorHit } from '../../../src/plugins.js';

export class TopKHits {
  private readonly keys: Float64Array;
  private readonly scores: Float64Array;
  private length = 0;

  constructor(readonly capacity: number) {
    this.keys = new Float64Array(Math.max(capacity, 0));
    this.scores = new Float64Array(Math.max(capacity, 0));
  }

  offer(key: number, score: number): void {
    if (this.capacity <= 0) return;
    if (this.length < this.capacity) {
      this.keys[this.length] = key;
      this.scores[this.length] = score;
      this.siftUp(this.length++);
      return;
    }
    if (!isBetter(score, key, this.scores[0], this.keys[0])) return;
    this.keys[0] = key;
    this.scores[0] = score;
    this.siftDown(0);
  }

  /** Best first: highest score, then lowest key. */
  bestFirst(): VectorHit[] {
    const hits: VectorHit[] = [];
    for (let i = 0; i < this.length; i++) hits.push({ key: this.keys[i], score: this.scores[i] });
    return hits.sort(compareHits);
  }

  private siftUp(index: number): void {
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!isBetter(this.scores[parent], this.keys[parent], this.scores[index], this.keys[index])) return;
      this.swap(index, parent);
      index = parent;
    }
  }

  private siftDown(index: number): void {
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let worst = index;
      if (left < this.length && isBetter(this.scores[worst], this.keys[worst], this.scores[left], this.keys[left])) worst = left;
      if (right < this.length && isBetter(this.scores[worst], this.keys[worst], this.scores[right], this.keys[right])) worst = right;
      if (worst === index) return;
      this.swap(index, worst);
      index = worst;
    }
  }

  private swap(a: number, b: number): void {
    const key = this.keys[a];
    const score = this.scores[a];
    this.keys[a] = this.keys[b];
    this.scores[a] = this.scores[b];
    this.keys[b] = key;
    this.scores[b] = score;
  }
}

function isBetter(score: number, key: number, otherScore: number, otherKey: number): boolean {
  return score > otherScore || (score === otherScore && key < otherKey);
}

export function compareHits(a: VectorHit, b: VectorHit): number {
  return b.score - a.score || a.key - b.key;
}
