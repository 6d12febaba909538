/**
 * The rows holding each value at the metadata paths filters ask about: the embedded counterpart of
 * the GIN index over chunk metadata on PostgreSQL (migration 0018), which also serves ranges.
 * Without it, a filter few rows pass is tested on every row of the collection (10-20 ms at 115k
 * chunks, bench/README.md "Metadata filters"); with it, only the rows holding the filter's values
 * are tested and scored.
 *
 * A path is indexed when a filter first asks about it (one pass over the rows) and kept current by
 * every write from then on; at most `maxPaths` are kept, the least recently asked dropped first, so
 * a client filtering on ever new fields cannot grow memory without bound.
 *
 * Served: `$eq`, `$in` and the ranges (`$gt $gte $lt $lte`) on a path of object keys (a segment that
 * reads as an integer may pick an array element, so such a path is not served); an `and` by its
 * smallest served part, or by the intersection of its parts when every part is served exactly and
 * small; an `or` only when every part is; `not`, `$ne`, `$nin` and `$exists` never. The answer holds
 * every row that passes, and exactly those when every part of the filter is served (`exact`); only
 * then may callers skip testing the filter. Sizes are counted before keys are gathered, so a
 * condition too many rows pass costs no more than counting them.
 */
import type { ComparisonOperator, FieldCondition, MetadataFilter } from '../../../src/search/filters/filter-types.js';
import { compareCodePoints, isPathOfObjectKeys } from '../../../src/search/filters/match-filter.js';
import { PathValues, union, type Bound, type Interval, type KeysPlan } from './path-values.js';

export interface FilterCandidates extends KeysPlan {
  /** Exactly the rows that pass the filter. */
  exact: boolean;
}

/** Every row's key with its metadata, for indexing a path the first time it is asked about. */
export type RowsOfCollection = () => Iterable<readonly [number, Record<string, unknown>]>;

const defaultMaxPaths = 16;

export class MetadataValueIndex {
  /** In order of last use: a Map iterates in insertion order, and each use re-inserts its path. */
  private readonly indexedPaths = new Map<string, PathValues>();

  constructor(private readonly rows: RowsOfCollection, private readonly maxPaths = defaultMaxPaths) {}

  /** How many paths are indexed now. */
  get pathCount(): number {
    return this.indexedPaths.size;
  }

  /**
   * The rows that may pass the filter (every row that passes is among them), or null when the
   * filter has no part this index serves. An `and` intersects its parts when each holds at most
   * `intersectAtMost` rows. The keys may be the index's own set: read them before the next write.
   */
  candidates(filter: MetadataFilter, intersectAtMost = Number.POSITIVE_INFINITY): FilterCandidates | null {
    switch (filter.kind) {
      case 'and': {
        const { intervals, others } = intervalsOfRanges(filter.filters);
        const parts = [
          ...intervals.map(({ path, interval }) => ({ ...this.valuesAt(path).inInterval(interval), exact: true })),
          ...others.map((part) => this.candidates(part, intersectAtMost)),
        ];
        const served = parts.filter((part) => part !== null).sort((left, right) => left.size - right.size);
        if (served.length === 0) return null;
        const exactParts = served.length === parts.length && served.every((part) => part.exact);
        if (served.length === 1) return { ...served[0]!, exact: exactParts };
        if (!exactParts || served.at(-1)!.size > intersectAtMost) return { ...served[0]!, exact: false };
        return { size: served[0]!.size, keys: () => intersection(served.map((part) => part.keys())), exact: true };
      }
      case 'or': {
        if (filter.filters.length === 0) return null;
        const parts: FilterCandidates[] = [];
        for (const part of filter.filters) {
          const candidates = this.candidates(part, intersectAtMost);
          if (candidates === null) return null;
          parts.push(candidates);
        }
        return { size: parts.reduce((sum, part) => sum + part.size, 0), keys: () => union(parts.map((part) => part.keys())), exact: parts.every((part) => part.exact) };
      }
      case 'not':
        return null;
      case 'field': {
        const { path, condition } = filter;
        if (!isPathOfObjectKeys(path)) return null;
        switch (condition.operator) {
          case '$eq':
            return { ...this.valuesAt(path).equalTo([condition.value]), exact: true };
          case '$in':
            return { ...this.valuesAt(path).equalTo(condition.values), exact: true };
          case '$gt':
          case '$gte':
          case '$lt':
          case '$lte':
            return { ...this.valuesAt(path).inInterval(intervalOf(condition.operator, condition.value)), exact: true };
          default:
            return null;
        }
      }
    }
  }

  /** Records a new row's values at the indexed paths. */
  addRow(key: number, metadata: Record<string, unknown>): void {
    for (const values of this.indexedPaths.values()) values.addRow(key, metadata);
  }

  /** Forgets a row's values; `metadata` is what the row held. */
  removeRow(key: number, metadata: Record<string, unknown>): void {
    for (const values of this.indexedPaths.values()) values.removeRow(key, metadata);
  }

  private valuesAt(path: readonly string[]): PathValues {
    const name = JSON.stringify(path);
    const indexed = this.indexedPaths.get(name);
    if (indexed) {
      this.indexedPaths.delete(name);
      this.indexedPaths.set(name, indexed);
      return indexed;
    }
    if (this.indexedPaths.size >= this.maxPaths) this.indexedPaths.delete(this.indexedPaths.keys().next().value!);
    const values = new PathValues(path);
    for (const [key, metadata] of this.rows()) values.addRow(key, metadata);
    this.indexedPaths.set(name, values);
    return values;
  }
}

function intervalOf(operator: ComparisonOperator, value: number | string): Interval {
  const bound = { value, inclusive: operator === '$gte' || operator === '$lte' };
  return operator === '$gt' || operator === '$gte' ? { lower: bound } : { upper: bound };
}

/**
 * The ranges among an `and`'s parts joined into one interval per path and type of bound
 * (`{"year": {"$gte": 2020, "$lt": 2024}}` is two parts, one slice of the values), and the other parts.
 */
function intervalsOfRanges(parts: readonly MetadataFilter[]): { intervals: Array<{ path: readonly string[]; interval: Interval }>; others: MetadataFilter[] } {
  const intervals = new Map<string, { path: readonly string[]; interval: Interval }>();
  const others: MetadataFilter[] = [];
  for (const part of parts) {
    if (part.kind !== 'field' || !isComparison(part.condition) || !isPathOfObjectKeys(part.path)) {
      others.push(part);
      continue;
    }
    const { operator, value } = part.condition;
    const name = `${typeof value} ${JSON.stringify(part.path)}`;
    const joined = intervals.get(name);
    const added = intervalOf(operator, value);
    if (!joined) intervals.set(name, { path: part.path, interval: added });
    else joined.interval = { lower: tighter(joined.interval.lower, added.lower, 1), upper: tighter(joined.interval.upper, added.upper, -1) };
  }
  return { intervals: [...intervals.values()], others };
}

function isComparison(condition: FieldCondition): condition is Extract<FieldCondition, { operator: ComparisonOperator }> {
  return condition.operator === '$gt' || condition.operator === '$gte' || condition.operator === '$lt' || condition.operator === '$lte';
}

/** Of two bounds on one side, the one fewer values pass: `direction` 1 for lower bounds (the higher wins), -1 for upper. */
function tighter(left: Bound | undefined, right: Bound | undefined, direction: 1 | -1): Bound | undefined {
  if (!left || !right) return left ?? right;
  const order = typeof left.value === 'number' ? (left.value as number) - (right.value as number) : compareCodePoints(left.value as string, right.value as string);
  if (order !== 0) return order * direction > 0 ? left : right;
  return left.inclusive ? right : left;
}

/** The keys in every part; `parts` smallest first, at least one. */
function intersection(parts: ReadonlyArray<ReadonlySet<number>>): ReadonlySet<number> {
  if (parts.length === 1) return parts[0]!;
  const [smallest, ...others] = parts;
  const keys = new Set<number>();
  for (const key of smallest!) if (others.every((part) => part.has(key))) keys.add(key);
  return keys;
}
