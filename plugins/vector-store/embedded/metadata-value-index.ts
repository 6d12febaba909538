/**
 * The keys of the rows holding each value at a metadata path, for the paths equality filters ask
 * about: the embedded counterpart of the GIN index over chunk metadata on PostgreSQL (migration
 * 0018). Without it, a filter few rows pass is tested on every row of the collection (10-20 ms at
 * 115k chunks, bench/results/filtered-queries-pglite.json); with it, only the rows holding the
 * filter's values are tested and scored.
 *
 * A path is indexed when a filter first asks about it (one pass over the rows) and kept current by
 * every write from then on; at most `maxPaths` are kept, the least recently asked dropped first, so
 * a client filtering on ever new fields cannot grow memory without bound.
 *
 * Which filters it serves follows filter-to-sql.ts's containment: `$eq` and `$in` on a path of
 * object keys (a segment that reads as an integer may pick an array element, so such a path is not
 * served); an `and` by the intersection of its parts when all are served, else by its most
 * selective served part; an `or` only when every part is,
 * `not` never. The answer is a superset of the passing rows, exactly them when every part of the
 * filter is served; only then may callers skip testing the filter.
 */
import type { FilterScalar, MetadataFilter } from '../../../src/search/filters/filter-types.js';
import { integerSegment, valueAtPath } from '../../../src/search/filters/match-filter.js';

/** Row keys by the value they hold at one path; a Map's SameValueZero keeps 1 and "1" apart, 0 and -0 together, as JSON equality does. */
type KeysByValue = Map<FilterScalar, Set<number>>;

interface IndexedPath {
  path: readonly string[];
  keysByValue: KeysByValue;
}

export interface FilterCandidates {
  keys: ReadonlySet<number>;
  /** Exactly the rows that pass the filter. */
  exact: boolean;
}

/** Every row's key with its metadata, for indexing a path the first time it is asked about. */
export type RowsOfCollection = () => Iterable<readonly [number, Record<string, unknown>]>;

const defaultMaxPaths = 16;

export class MetadataValueIndex {
  /** In order of last use: a Map iterates in insertion order, and each use re-inserts its path. */
  private readonly indexedPaths = new Map<string, IndexedPath>();

  constructor(private readonly rows: RowsOfCollection, private readonly maxPaths = defaultMaxPaths) {}

  /** How many paths are indexed now. */
  get pathCount(): number {
    return this.indexedPaths.size;
  }

  /**
   * The rows that may pass the filter (every row that passes is among them), or null when the
   * filter has no part this index serves. `exact` when they are exactly the rows that pass (every
   * part of the filter served), so the filter need not be tested on them. The set may be the
   * index's own: read it before the next write.
   */
  candidates(filter: MetadataFilter): FilterCandidates | null {
    switch (filter.kind) {
      case 'and': {
        const parts = filter.filters.map((part) => this.candidates(part));
        const served = parts.filter((part) => part !== null);
        if (served.length === 0) return null;
        served.sort((left, right) => left.keys.size - right.keys.size);
        if (served.length === parts.length && served.every((part) => part.exact)) return { keys: intersection(served.map((part) => part.keys)), exact: true };
        return { keys: served[0]!.keys, exact: false };
      }
      case 'or': {
        if (filter.filters.length === 0) return null;
        const parts: FilterCandidates[] = [];
        for (const part of filter.filters) {
          const candidates = this.candidates(part);
          if (candidates === null) return null;
          parts.push(candidates);
        }
        return { keys: union(parts.map((part) => part.keys)), exact: parts.every((part) => part.exact) };
      }
      case 'not':
        return null;
      case 'field': {
        const { path, condition } = filter;
        if (path.some((segment) => integerSegment.test(segment))) return null;
        const scalars = condition.operator === '$eq' ? [condition.value] : condition.operator === '$in' ? condition.values : null;
        if (scalars === null) return null;
        const keysByValue = this.keysByValueAt(path);
        // scalarsAt reads a row's values as matchesFilter's `$eq` and `$in` compare them.
        return { keys: union(scalars.map((scalar) => keysByValue.get(scalar) ?? emptyKeys)), exact: true };
      }
    }
  }

  /** Records a new row's values at the indexed paths. */
  addRow(key: number, metadata: Record<string, unknown>): void {
    for (const { path, keysByValue } of this.indexedPaths.values()) recordRow(keysByValue, path, key, metadata);
  }

  /** Forgets a row's values; `metadata` is what the row held. */
  removeRow(key: number, metadata: Record<string, unknown>): void {
    for (const { path, keysByValue } of this.indexedPaths.values()) {
      for (const value of scalarsAt(metadata, path)) {
        const keys = keysByValue.get(value);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) keysByValue.delete(value);
      }
    }
  }

  private keysByValueAt(path: readonly string[]): KeysByValue {
    const name = JSON.stringify(path);
    const indexed = this.indexedPaths.get(name);
    if (indexed) {
      this.indexedPaths.delete(name);
      this.indexedPaths.set(name, indexed);
      return indexed.keysByValue;
    }
    if (this.indexedPaths.size >= this.maxPaths) this.indexedPaths.delete(this.indexedPaths.keys().next().value!);
    const keysByValue: KeysByValue = new Map();
    for (const [key, metadata] of this.rows()) recordRow(keysByValue, path, key, metadata);
    this.indexedPaths.set(name, { path, keysByValue });
    return keysByValue;
  }
}

const emptyKeys: ReadonlySet<number> = new Set();

function recordRow(keysByValue: KeysByValue, path: readonly string[], key: number, metadata: Record<string, unknown>): void {
  for (const value of scalarsAt(metadata, path)) {
    let keys = keysByValue.get(value);
    if (!keys) keysByValue.set(value, (keys = new Set()));
    keys.add(key);
  }
}

/**
 * The scalars `$eq` can match at the path (match-filter.ts): the value when it is a scalar, the
 * scalar elements when it is an array; nothing for an object or a missing field.
 */
function scalarsAt(metadata: Record<string, unknown>, path: readonly string[]): FilterScalar[] {
  const value = valueAtPath(metadata, path);
  if (Array.isArray(value)) return value.filter(isScalar);
  return isScalar(value) ? [value] : [];
}

function isScalar(value: unknown): value is FilterScalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** The keys in every part; `parts` smallest first, at least one. */
function intersection(parts: ReadonlyArray<ReadonlySet<number>>): ReadonlySet<number> {
  if (parts.length === 1) return parts[0]!;
  const [smallest, ...others] = parts;
  const keys = new Set<number>();
  for (const key of smallest!) if (others.every((part) => part.has(key))) keys.add(key);
  return keys;
}

function union(parts: ReadonlyArray<ReadonlySet<number>>): ReadonlySet<number> {
  if (parts.length === 1) return parts[0]!;
  const keys = new Set<number>();
  for (const part of parts) for (const key of part) keys.add(key);
  return keys;
}
