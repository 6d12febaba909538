/**
 * Posting lists as the SQL keyword index reads them: bytea values of 16 bytes a posting, as
 * PostgreSQL's `int8send(chunk_key) || int4send(term_frequency) || int4send(chunk_length)` writes
 * them (big-endian). A term's list may come in segments (its packed postings, less the keys removed
 * since, and the postings not packed yet). They are scored here with the memory index's arithmetic,
 * so both indexes give bit-identical scores.
 */
import { bm25Idf, bm25WeightForIdf } from '../bm25.js';

export const encodedPostingBytes = 16;

/** The SQL expression that encodes one posting row (column names of keyword_postings). */
export const encodedPostingSql = 'int8send(chunk_key) || int4send(term_frequency) || int4send(chunk_length)';

/** The SQL aggregate that packs a term's postings into one bytea. */
export const encodePostingsSql = `string_agg(${encodedPostingSql}, ''::bytea)`;

export interface PostingSegment {
  postings: Uint8Array;
  /** Keys whose postings in this segment no longer count. */
  excludedKeys?: ReadonlySet<number> | undefined;
}

export interface EncodedPostingList {
  /** How often the term occurs in the query: each occurrence adds its weight once more. */
  queryFrequency: number;
  /** A key occurs in at most one segment of a list, not counting excluded postings. */
  segments: PostingSegment[];
}

export interface PartitionPostings {
  chunkCount: number;
  totalLength: number;
  /** In the query's term order (analyzeQuery), which is the order each chunk's weights are added in. */
  lists: EncodedPostingList[];
}

/** A chunk's score goes up to `visit` once, after every term has added to it. */
export type ScoredChunkVisitor = (key: number, score: number) => void;

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function keyAt(view: DataView, offset: number): number {
  return view.getInt32(offset) * 4294967296 + view.getUint32(offset + 4);
}

/** Keys as `string_agg(int8send(chunk_key), ''::bytea)` packs them, 8 bytes each. */
export function decodeKeys(encodedKeys: Uint8Array): Set<number> {
  const view = viewOf(encodedKeys);
  const keys = new Set<number>();
  for (let offset = 0; offset < encodedKeys.byteLength; offset += 8) keys.add(keyAt(view, offset));
  return keys;
}

/**
 * A term's packed value brought up to date: `packed` without the postings of `removedKeys`, merged
 * by key with `added`. Values are kept in key order because scoring adds into an array indexed by
 * key: with six lists of 5k-30k postings, it took 10-14 % longer over shuffled keys than over sorted
 * ones. Either part is sorted here only when it is out of order: rows come back in the order they
 * were written, mostly the order of their keys, but not when ingestion workers write beside each
 * other or a chunk is indexed again under its key (a raw vector upserted again); the merge keeps
 * that case linear. A value packed before values were kept in order (2026-11-29) may be the old
 * value with the new rows after it.
 */
export function updatePackedPostings(packed: Uint8Array | undefined, removedKeys: ReadonlySet<number>, added: Uint8Array | undefined): Buffer {
  const parts: Uint8Array[] = [];
  if (packed && removedKeys.size === 0) parts.push(packed);
  else if (packed) {
    const view = viewOf(packed);
    let keptFrom = 0;
    for (let offset = 0; offset < packed.byteLength; offset += encodedPostingBytes) {
      if (!removedKeys.has(keyAt(view, offset))) continue;
      if (offset > keptFrom) parts.push(packed.subarray(keptFrom, offset));
      keptFrom = offset + encodedPostingBytes;
    }
    if (keptFrom < packed.byteLength) parts.push(packed.subarray(keptFrom));
  }
  const kept = Buffer.concat(parts);
  const keptInOrder = isInKeyOrder(kept) ? kept : sortedByKey(kept);
  if (!added) return keptInOrder;
  return mergedByKey(keptInOrder, isInKeyOrder(added) ? added : sortedByKey(added));
}

function isInKeyOrder(postings: Uint8Array): boolean {
  const view = viewOf(postings);
  for (let offset = encodedPostingBytes; offset < postings.byteLength; offset += encodedPostingBytes) {
    if (keyAt(view, offset) < keyAt(view, offset - encodedPostingBytes)) return false;
  }
  return true;
}

/** Two values in key order as one. New chunks get larger keys, so mostly `added` just follows. */
function mergedByKey(first: Uint8Array, second: Uint8Array): Buffer {
  const merged = Buffer.allocUnsafe(first.byteLength + second.byteLength);
  const firstView = viewOf(first);
  const secondView = viewOf(second);
  let firstOffset = 0;
  let secondOffset = 0;
  let mergedOffset = 0;
  while (firstOffset < first.byteLength && secondOffset < second.byteLength) {
    const firstKey = keyAt(firstView, firstOffset);
    const secondKey = keyAt(secondView, secondOffset);
    // The run of `first` up to the next key of `second` is copied whole.
    let runEnd = firstOffset;
    while (runEnd < first.byteLength && keyAt(firstView, runEnd) <= secondKey) runEnd += encodedPostingBytes;
    if (runEnd > firstOffset) {
      merged.set(first.subarray(firstOffset, runEnd), mergedOffset);
      mergedOffset += runEnd - firstOffset;
      firstOffset = runEnd;
      continue;
    }
    let secondRunEnd = secondOffset;
    while (secondRunEnd < second.byteLength && keyAt(secondView, secondRunEnd) < firstKey) secondRunEnd += encodedPostingBytes;
    merged.set(second.subarray(secondOffset, secondRunEnd), mergedOffset);
    mergedOffset += secondRunEnd - secondOffset;
    secondOffset = secondRunEnd;
  }
  merged.set(first.subarray(firstOffset), mergedOffset);
  mergedOffset += first.byteLength - firstOffset;
  merged.set(second.subarray(secondOffset), mergedOffset);
  return merged;
}

function sortedByKey(postings: Uint8Array): Buffer {
  const view = viewOf(postings);
  const count = postings.byteLength / encodedPostingBytes;
  const order = Array.from({ length: count }, (_, index) => index);
  const keys = order.map((index) => keyAt(view, index * encodedPostingBytes));
  order.sort((left, right) => keys[left] - keys[right]);
  const sorted = Buffer.allocUnsafe(postings.byteLength);
  order.forEach((index, position) => {
    sorted.set(postings.subarray(index * encodedPostingBytes, (index + 1) * encodedPostingBytes), position * encodedPostingBytes);
  });
  return sorted;
}

/**
 * Scores go into an array indexed by key minus the smallest key when the keys span at most this
 * many times the postings (a collection's chunk keys are mostly consecutive); otherwise a Map gives
 * each key its slot, which was 4 times slower on Cranfield's questions over 70k chunks.
 */
const denseSpanPerPosting = 4;

/**
 * Scores every chunk of one partition that holds a query term, with the partition's statistics.
 * One loop for both ways of finding a key's slot: with an accumulator object per way, the call
 * through it made the loop twice as slow (85k postings of a long question in a micro-benchmark).
 */
export function scorePartitionPostings(partition: PartitionPostings, k1: number, b: number, visit: ScoredChunkVisitor): void {
  const segmentsOfLists = partition.lists.map((list) => list.segments.map((segment) => ({ view: viewOf(segment.postings), excludedKeys: segment.excludedKeys })));
  const documentFrequencies: number[] = [];
  let smallestKey = Infinity;
  let largestKey = -Infinity;
  let postingCount = 0;
  for (const segments of segmentsOfLists) {
    let documentFrequency = 0;
    for (const { view, excludedKeys } of segments) {
      const length = view.byteLength / encodedPostingBytes;
      for (let index = 0; index < length; index++) {
        const key = keyAt(view, index * encodedPostingBytes);
        if (excludedKeys?.has(key)) continue;
        documentFrequency += 1;
        if (key < smallestKey) smallestKey = key;
        if (key > largestKey) largestKey = key;
      }
    }
    documentFrequencies.push(documentFrequency);
    postingCount += documentFrequency;
  }
  if (postingCount === 0) return;
  const span = largestKey - smallestKey + 1;
  const slotByKey = span <= denseSpanPerPosting * postingCount ? undefined : new Map<number, number>();
  const keyOfSlot: number[] = [];
  const scores = new Float64Array(slotByKey ? postingCount : span);
  const touched = new Int32Array(Math.min(scores.length, postingCount));
  let touchedCount = 0;
  const averageLength = partition.totalLength / partition.chunkCount;
  for (let listIndex = 0; listIndex < segmentsOfLists.length; listIndex++) {
    const queryFrequency = partition.lists[listIndex].queryFrequency;
    const idf = bm25Idf(documentFrequencies[listIndex], partition.chunkCount);
    for (const { view, excludedKeys } of segmentsOfLists[listIndex]) {
      const length = view.byteLength / encodedPostingBytes;
      for (let index = 0; index < length; index++) {
        const offset = index * encodedPostingBytes;
        const key = keyAt(view, offset);
        if (excludedKeys?.has(key)) continue;
        let slot: number;
        if (slotByKey === undefined) {
          slot = key - smallestKey;
        } else {
          slot = slotByKey.get(key) ?? keyOfSlot.length;
          if (slot === keyOfSlot.length) {
            slotByKey.set(key, slot);
            keyOfSlot.push(key);
          }
        }
        const weight = bm25WeightForIdf(idf, view.getInt32(offset + 8), view.getInt32(offset + 12), averageLength, k1, b);
        // Every weight is positive, so a zero score marks a slot not yet touched.
        if (scores[slot] === 0) touched[touchedCount++] = slot;
        scores[slot] += queryFrequency * weight;
      }
    }
  }
  for (let index = 0; index < touchedCount; index++) {
    const slot = touched[index];
    visit(slotByKey === undefined ? slot + smallestKey : keyOfSlot[slot], scores[slot]);
  }
}
