/**
 * Clustered vectors for the vector-store benchmarks: Gaussian centres, unit Gaussian noise around
 * them, from a seeded generator (mulberry32), so every run draws the same rows. A query drawn the
 * same way has its true neighbours around its own centre, so recall measures whether a graph finds
 * the right ones.
 */
import { seededRandom } from './corpus.js';

export interface ClusteredVectorOptions {
  seed: number;
  dimension: number;
  clusterCount: number;
}

/** Draws the centres, then returns a function giving `count` more rows, one after another, as one matrix. */
export function clusteredVectorSource({ seed, dimension, clusterCount }: ClusteredVectorOptions): (count: number) => Float32Array {
  const random = seededRandom(seed);
  const gaussian = (): number => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const centres = Float32Array.from({ length: clusterCount * dimension }, gaussian);
  return (count) => {
    const matrix = new Float32Array(count * dimension);
    for (let row = 0; row < count; row++) {
      const centre = Math.floor(random() * clusterCount) * dimension;
      for (let i = 0; i < dimension; i++) matrix[row * dimension + i] = centres[centre + i]! + gaussian();
    }
    return matrix;
  };
}
