/** The text of raw vector `n` in the embedded-graph HTTP tests: words the local embedder tells apart. */
export const cargoText = (n: number) => `cargo ${n} manifest berth ${n % 97} crane ${n % 13}`;

/** Exact cosine similarity, the reference the graph's answers are checked against. */
export function cosineSimilarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < a.length; index++) {
    dot += a[index]! * b[index]!;
    normA += a[index]! ** 2;
    normB += b[index]! ** 2;
  }
  return dot / Math.sqrt(normA * normB);
}
