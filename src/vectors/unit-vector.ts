/**
 * A raw vector scaled to length 1 as 32-bit floats, or null when it has no direction (all zeros).
 * Cosine similarity ignores length, so this changes no ranking; it keeps every stored value
 * within [-1, 1]. Stored as sent, values beyond float32's range (about ±3.4e38) became Infinity
 * and values below its smallest (about 1e-45) became 0, which made cosine NaN for the vector; a
 * store that squares values in 32-bit arithmetic overflows from about 1.8e19. The length is
 * taken after dividing by the largest magnitude, so that squaring cannot overflow or underflow
 * in double precision either.
 */
export function unitVector(values: readonly number[]): Float32Array | null {
  let largest = 0;
  for (const value of values) largest = Math.max(largest, Math.abs(value));
  if (largest === 0) return null;
  let sumOfSquares = 0;
  for (const value of values) sumOfSquares += (value / largest) ** 2;
  const length = Math.sqrt(sumOfSquares);
  return Float32Array.from(values, (value) => value / largest / length);
}
