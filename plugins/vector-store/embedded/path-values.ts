/**
 * The rows holding each value at one metadata path, as match-filter.ts reads them: a scalar there is
 * the row's value (compared by `$eq`, `$in` and the ranges), a scalar element of an array there is
 * one of its values for `$eq` and `$in` only (ranges never compare an array's elements). Numbers and
 * strings held as values are also kept sorted (strings by code point, as PostgreSQL's "C"
 * collation), so a range is a slice of them.
 */
import type { FilterScalar } from '../../../src/search/filters/filter-types.js';
import { compareCodePoints, valueAtPath } from '../../../src/search/filters/match-filter.js';

/**
 * The rows holding a value: one row's key alone, a set from two rows on. A value held by a single
 * row (an id, a timestamp) then costs a map entry, not a set: a path of unique values took 198 bytes
 * a row with a set each.
 */
type RowsOfValue = number | Set<number>;

/** Rows by value; a Map's SameValueZero keeps 1 and "1" apart, 0 and -0 together, as JSON equality does. */
type KeysByValue = Map<FilterScalar, RowsOfValue>;

/** Some rows, counted before they are gathered: a plan may be dropped for having too many. */
export interface KeysPlan {
  /** At least the number of keys (several sets may hold the same key). */
  size: number;
  keys(): ReadonlySet<number>;
}

export interface Bound {
  value: number | string;
  inclusive: boolean;
}

/** At least one bound; both of one type. */
export interface Interval {
  lower?: Bound | undefined;
  upper?: Bound | undefined;
}

const compareNumbers = (left: number, right: number): number => left - right;

export class PathValues {
  private readonly keysByValue: KeysByValue = new Map();
  private readonly keysByElement: KeysByValue = new Map();
  /** The distinct numbers and strings of `keysByValue`, ascending. */
  private readonly numbers: number[] = [];
  private readonly strings: string[] = [];

  constructor(readonly path: readonly string[]) {}

  addRow(key: number, metadata: Record<string, unknown>): void {
    this.changeRow(key, metadata, 'insert');
  }

  /** Forgets a row; `metadata` is what it held. */
  removeRow(key: number, metadata: Record<string, unknown>): void {
    this.changeRow(key, metadata, 'remove');
  }

  private changeRow(key: number, metadata: Record<string, unknown>, change: 'insert' | 'remove'): void {
    // Both report whether the value came to be held, or stopped being held, by any row.
    const changeKey = change === 'insert' ? addKey : removeKey;
    const value = valueAtPath(metadata, this.path);
    if (Array.isArray(value)) {
      for (const element of value) if (isScalar(element)) changeKey(this.keysByElement, element, key);
    } else if (isScalar(value) && changeKey(this.keysByValue, value, key)) {
      this.changeOrdered(value, change);
    }
  }

  /** Rows holding one of the scalars, as a value or an array element (`$eq`, `$in`). */
  equalTo(scalars: readonly FilterScalar[]): KeysPlan {
    return planOf(scalars.flatMap((scalar) => [this.keysByValue.get(scalar), this.keysByElement.get(scalar)]).filter((rows) => rows !== undefined));
  }

  /**
   * Rows whose value is a number (or a string, by code point) between the bounds, which are both
   * numbers or both strings; a missing bound is open.
   */
  inInterval({ lower, upper }: Interval): KeysPlan {
    const sample = (lower ?? upper)!.value;
    const ordered: Array<number | string> = typeof sample === 'number' ? this.numbers : this.strings;
    const compare = (typeof sample === 'number' ? compareNumbers : compareCodePoints) as (left: number | string, right: number | string) => number;
    // The first value inside the lower bound, and the first past the upper one.
    const start = lower ? lowerBound(ordered, (value) => (lower.inclusive ? compare(value, lower.value) >= 0 : compare(value, lower.value) > 0)) : 0;
    const end = upper ? lowerBound(ordered, (value) => (upper.inclusive ? compare(value, upper.value) > 0 : compare(value, upper.value) >= 0)) : ordered.length;
    const held: RowsOfValue[] = [];
    for (let position = start; position < end; position++) held.push(this.keysByValue.get(ordered[position]!)!);
    return planOf(held);
  }

  private changeOrdered(value: FilterScalar, change: 'insert' | 'remove'): void {
    if (typeof value === 'number') changeSorted(this.numbers, value, compareNumbers, change);
    else if (typeof value === 'string') changeSorted(this.strings, value, compareCodePoints, change);
  }
}

function isScalar(value: unknown): value is FilterScalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** Adds the key; true when the value was held by no row before. */
function addKey(keysByValue: KeysByValue, value: FilterScalar, key: number): boolean {
  const rows = keysByValue.get(value);
  if (rows === undefined) keysByValue.set(value, key);
  else if (typeof rows !== 'number') rows.add(key);
  else if (rows !== key) keysByValue.set(value, new Set([rows, key]));
  return rows === undefined;
}

/** Removes the key; true when that left the value with no rows (and so removed the value). */
function removeKey(keysByValue: KeysByValue, value: FilterScalar, key: number): boolean {
  const rows = keysByValue.get(value);
  if (typeof rows === 'number') {
    if (rows !== key) return false;
    keysByValue.delete(value);
    return true;
  }
  if (rows === undefined || !rows.delete(key)) return false;
  // Down to one row: its key alone again.
  if (rows.size === 1) keysByValue.set(value, rows.values().next().value!);
  return false;
}

/** The first position whose value satisfies `isPast` (false, then true, along the array). */
function lowerBound<T>(sorted: readonly T[], isPast: (value: T) => boolean): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (isPast(sorted[middle]!)) high = middle;
    else low = middle + 1;
  }
  return low;
}

function changeSorted<T>(sorted: T[], value: T, compare: (left: T, right: T) => number, change: 'insert' | 'remove'): void {
  const position = lowerBound(sorted, (held) => compare(held, value) >= 0);
  if (change === 'insert') sorted.splice(position, 0, value);
  else if (position < sorted.length && compare(sorted[position]!, value) === 0) sorted.splice(position, 1);
}

/** The rows of the values, counted now and gathered when asked for (a single set is the index's own). */
function planOf(held: readonly RowsOfValue[]): KeysPlan {
  return {
    size: held.reduce<number>((sum, rows) => sum + (typeof rows === 'number' ? 1 : rows.size), 0),
    keys: () => (held.length === 1 && typeof held[0] !== 'number' ? held[0]! : union(held.map((rows) => (typeof rows === 'number' ? [rows] : rows)))),
  };
}

export function union(parts: ReadonlyArray<Iterable<number>>): ReadonlySet<number> {
  if (parts.length === 1 && parts[0] instanceof Set) return parts[0];
  const keys = new Set<number>();
  for (const part of parts) for (const key of part) keys.add(key);
  return keys;
}
