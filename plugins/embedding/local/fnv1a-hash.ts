/**
 * 32-bit FNV-1a, fed UTF-16 code units one at a time so callers can hash n-grams incrementally
 * without building substrings (the local embedder hashes ~1,500 character n-grams per 800-character
 * chunk; allocating a string for each costs more than the hashing itself).
 *
 * FNV-1a's low and high bits mix poorly for short inputs, so a bucket index or sign is taken only
 * after `mixHash` (murmur3's fmix32 finaliser), which makes every output bit depend on every input bit.
 */

export const fnvOffsetBasis = 0x811c9dc5;
const fnvPrime = 0x01000193;

/** One FNV-1a round: xor in a code unit, multiply by the FNV prime (mod 2^32). */
export function fnvStep(hash: number, codeUnit: number): number {
  return Math.imul(hash ^ codeUnit, fnvPrime);
}

export function fnvHashString(hash: number, text: string): number {
  let result = hash;
  for (let index = 0; index < text.length; index++) result = fnvStep(result, text.charCodeAt(index));
  return result;
}

/** murmur3 fmix32: an unsigned 32-bit avalanche of `hash`. */
export function mixHash(hash: number): number {
  let result = hash ^ (hash >>> 16);
  result = Math.imul(result, 0x85ebca6b);
  result ^= result >>> 13;
  result = Math.imul(result, 0xc2b2ae35);
  result ^= result >>> 16;
  return result >>> 0;
}
