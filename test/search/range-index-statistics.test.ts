/**
 * The share of chunks in a range, estimated from a range index's statistics as pg_stats holds them
 * (range-index-statistics.ts), and combined over a filter's ranges (range-scope.ts): what decides
 * whether the chunks in a range are read at all (metadata-range-indexes.ts).
 */
import t from 'tap';
import { parseFilter } from '../../src/search/filters/parse-filter.js';
import { rangeScope, type ShareOfRange } from '../../src/search/filters/range-scope.js';
import { shareInRange, type RangeIndexStatistics } from '../../src/search/range-index-statistics.js';

/** Values 0..99 spread evenly: a histogram of 101 bounds, no common values, 10 % of rows without the field. */
const even: RangeIndexStatistics = { nullShare: 0.1, commonValues: [], commonShares: [], histogramBounds: Array.from({ length: 101 }, (_, n) => n) };

t.test('a histogram: the share of its buckets in range, of the rows holding the field', async (t) => {
  t.ok(Math.abs(shareInRange(even, 'number', [{ comparison: '<', bound: 10 }]) - 0.9 * 0.099) < 0.01, '$lt 10: about 9 % of all rows');
  t.ok(Math.abs(shareInRange(even, 'number', [{ comparison: '>=', bound: 50 }]) - 0.9 * 0.505) < 0.01, '$gte 50: about 45 %');
  t.equal(shareInRange(even, 'number', [{ comparison: '>', bound: 1000 }]), 0, 'beyond the largest value: none');
  t.ok(Math.abs(shareInRange(even, 'number', [{ comparison: '>=', bound: -5 }]) - 0.9) < 1e-9, 'below the smallest: every row holding the field');
});

t.test('common values count by their own shares; values of other types sort as jsonb does', async (t) => {
  const mixed: RangeIndexStatistics = {
    nullShare: 0,
    commonValues: [7, 'seven', true, [1], { a: 1 }, null],
    commonShares: [0.3, 0.1, 0.1, 0.1, 0.1, 0.05],
    histogramBounds: [],
  };
  t.ok(Math.abs(shareInRange(mixed, 'number', [{ comparison: '>', bound: 5 }]) - 0.6) < 1e-9, '$gt 5: the number 7 and the boolean, array and object above every number');
  t.ok(Math.abs(shareInRange(mixed, 'number', [{ comparison: '<', bound: 5 }]) - 0.15) < 1e-9, '$lt 5: the string and null below every number');
  const strings: RangeIndexStatistics = { nullShare: 0, commonValues: ['b', 'B'], commonShares: [0.5, 0.5], histogramBounds: [] };
  t.equal(shareInRange(strings, 'string', [{ comparison: '>=', bound: 'a' }]), 0.5, 'strings by code point: "B" sorts before "a"');
});

t.test('a filter\'s ranges combine: bounds on one field make an interval, fields take the smallest, an or adds', async (t) => {
  const shareOf: ShareOfRange = (index, bounds) => (index.path[0] === 'unknown' ? null : shareInRange(even, index.type, bounds));
  const estimate = (filter: unknown) => rangeScope(parseFilter(filter)!)!.estimateShare(shareOf);
  const between = estimate({ year: { $gte: 40, $lt: 60 } })!;
  t.ok(Math.abs(between - 0.9 * 0.2) < 0.01, `a lower and an upper bound: the share of their interval (${between.toFixed(3)})`);
  t.ok(Math.abs(estimate({ $and: [{ year: { $gte: 40 } }, { year: { $lt: 60 } }] })! - between) < 1e-9, 'also when written as two parts of an $and');
  t.ok(Math.abs(estimate({ $and: [{ year: { $lt: 10 } }, { price: { $lt: 50 } }] })! - 0.9 * 0.099) < 0.01, 'two fields: the smaller share');
  t.ok(Math.abs(estimate({ $or: [{ year: { $lt: 10 } }, { price: { $gte: 90 } }] })! - 0.9 * (0.099 + 0.109)) < 0.02, 'an or: the sum');
  t.equal(estimate({ $or: [{ year: { $lt: 10 } }, { unknown: { $gte: 90 } }] }), null, 'a share not known: no estimate');
  t.equal(rangeScope(parseFilter({ $not: { year: { $lt: 10 } } })!), null, 'a negated range has no indexable condition');
  t.equal(rangeScope(parseFilter({ 'odd key!': { $lt: 10 } })!), null, 'nor does a field of other characters than letters, digits, _ and -');
});
