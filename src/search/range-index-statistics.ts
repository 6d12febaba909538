/**
 * The share of a collection's chunks in a range, estimated from the statistics ANALYZE keeps of a
 * range index's expression (pg_stats: the share of NULLs, the most common values with their shares,
 * and a histogram of the rest in equal-count buckets), as PostgreSQL's own estimate of an inequality
 * does. PostgreSQL does not use a partial index's statistics for its estimates (metadata-range-indexes.ts),
 * so the service reads them itself, to skip reading the chunks in a range far too wide to rank by key.
 */
import type { RangeBound, RangeComparison, RangeValueType } from './filters/range-scope.js';

export interface RangeIndexStatistics {
  nullShare: number;
  commonValues: unknown[];
  commonShares: number[];
  histogramBounds: unknown[];
}

/** jsonb's order of types: null < string < number < boolean < array < object. */
function typeRank(value: unknown): number {
  if (value === null) return 0;
  if (typeof value === 'string') return 1;
  if (typeof value === 'number') return 2;
  if (typeof value === 'boolean') return 3;
  return Array.isArray(value) ? 4 : 5;
}

/**
 * Order as the index sorts: text by code point for a string index; jsonb's order for a number index
 * (numbers by value; strings' order there follows the database's collation, of no matter to a
 * number bound).
 */
function compareIndexed(type: RangeValueType, left: unknown, right: unknown): number {
  if (type === 'string') return String(left) < String(right) ? -1 : String(left) > String(right) ? 1 : 0;
  const rankDifference = typeRank(left) - typeRank(right);
  if (rankDifference !== 0) return rankDifference;
  if (typeof left === 'number' || typeof left === 'boolean') return Number(left) - Number(right);
  if (typeof left === 'string') return left < (right as string) ? -1 : left > (right as string) ? 1 : 0;
  return 0;
}

function satisfies(type: RangeValueType, value: unknown, comparison: RangeComparison, bound: number | string): boolean {
  const order = compareIndexed(type, value, bound);
  switch (comparison) {
    case '<': return order < 0;
    case '<=': return order <= 0;
    case '>': return order > 0;
    case '>=': return order >= 0;
  }
}

/** The share of the index's rows whose value satisfies every `value comparison bound`. */
export function shareInRange(statistics: RangeIndexStatistics, type: RangeValueType, bounds: RangeBound[]): number {
  const inRange = (value: unknown) => bounds.every(({ comparison, bound }) => satisfies(type, value, comparison, bound));
  let share = 0;
  let commonTotal = 0;
  statistics.commonValues.forEach((value, position) => {
    const valueShare = statistics.commonShares[position] ?? 0;
    commonTotal += valueShare;
    if (inRange(value)) share += valueShare;
  });
  const histogram = statistics.histogramBounds;
  if (histogram.length >= 2) {
    // The histogram's bounds split the rest into equal shares; the share of bounds in range stands
    // for the share of the rest (within one bucket of the truth).
    const boundsIn = histogram.filter(inRange).length;
    share += Math.max(0, 1 - statistics.nullShare - commonTotal) * (boundsIn / histogram.length);
  }
  return Math.min(1, share);
}
