/**
 * The rows holding each value at one metadata path, as match-filter.ts reads them: a scalar there is
 * the row's value (compared by `$eq`, `$in` and the ranges), a scalar element of an array there is
 * one of its values for `$eq` and `$in` only (ranges never compare an array's elements). Numbers and
 * strings held as values are also kept sorted (strings by code point, as PostgreSQL's "C"
 * collation), so a range is a slice of them.
 */
import type { FilterScalar } from '../../../src/search/filters/filter-types.js';
import { compareCodePoints, valueAtPath } from '../../../src/search/filters/match-filter.js';

/** Row keys by value; a Map's SameValueZero keeps 1 and "1" apart, 0 and -0 together, as JSON equality does. */
type KeysByValue = Map<FilterScalar, Set<number>>;

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
    const value = valueAtPath(metadata, this.path);
    if (Array.isArray(value)) {
      for (const element of value) if (isScalar(element)) keysFor(this.keysByElement, element).add(key);
    } else if (isScalar(value)) {
      let keys = this.keysByValue.get(value);
      if (!keys) {
        this.keysByValue.set(value, (keys = new Set()));
        this.changeOrdered(value, 'insert');
      }
      keys.add(key);
    }
  }

  /** Forgets a row; `metadata` is what it held. */
  removeRow(key: number, metadata: Record<string, unknown>): void {
    const value = valueAtPath(metadata, this.path);
    if (Array.isArray(value)) {
      for (const element of value) if (isScalar(element)) removeKey(this.keysByElement, element, key);
    } else if (isScalar(value) && removeKey(this.keysByValue, value, key)) {
      this.changeOrdered(value, 'remove');
    }
  }

  /** Rows holding one of the scalars, as a value or an array element (`$eq`, `$in`). */
  equalTo(scalars: readonly FilterScalar[]): KeysPlan {
    const sets = scalars.flatMap((scalar) => [this.keysByValue.get(scalar), this.keysByElement.get(scalar)]).filter((keys) => keys !== undefined);
    return planOf(sets);
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
    const sets: Array<Set<number>> = [];
    for (let position = start; position < end; position++) sets.push(this.keysByValue.get(ordered[position]!)!);
    return planOf(sets);
  }

  private changeOrdered(value: FilterScalar, change: 'insert' | 'remove'): void {
    if (typeof value === 'number') changeSorted(this.numbers, value, compareNumbers, change);
    else if (typeof value === 'string') changeSorted(this.strings, value, compareCodePoints, change);
  }
}

function isScalar(value: unknown): value is FilterScalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function keysFor(keysByValue: KeysByValue, value: FilterScalar): Set<number> {
  let keys = keysByValue.get(value);
  if (!keys) keysByValue.set(value, (keys = new Set()));
  return keys;
}

/** Removes the key; true when that left the value with no rows (and so removed the value). */
function removeKey(keysByValue: KeysByValue, value: FilterScalar, key: number): boolean {
  const keys = keysByValue.get(value);
  if (!keys || !keys.delete(key) || keys.size > 0) return false;
  keysByValue.delete(value);
  return true;
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

function planOf(sets: ReadonlyArray<ReadonlySet<number>>): KeysPlan {
  return { size: sets.reduce((sum, keys) => sum + keys.size, 0), keys: () => union(sets) };
}

export function union(parts: ReadonlyArray<ReadonlySet<number>>): ReadonlySet<number> {
  if (parts.length === 1) return parts[0]!;
  const keys = new Set<number>();
  for (const part of parts) for (const key of part) keys.add(key);
  return keys;
}
