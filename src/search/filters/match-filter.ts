/**
 * Evaluates a `MetadataFilter` against one chunk's metadata in JavaScript (the embedded indexes).
 * filter-to-sql.ts implements the same rules over jsonb, and test/search/filters.test.ts runs
 * one table of cases through both, so the semantics here are also PostgreSQL's:
 *
 * - A field is found by following its path like jsonb's `#>`: object keys by name; in an array,
 *   a segment that is an integer (as PostgreSQL's strtoint reads it: leading blanks, a sign)
 *   picks an element, negative from the end. Anything else is a missing field.
 * - Missing field: `$eq`, `$in` and comparisons are false; `$ne`, `$nin` and `$exists: false`
 *   are true. An explicit JSON null is present (`$exists: true`) and equals only `null`.
 * - Equality is JSON equality of scalars: 1 and "1" differ, 1 and 1.0 do not. When the value is an
 *   array, `$eq`/`$in` match if any element matches (jsonb `@>`); `$ne`/`$nin` if none does.
 * - `$gt $gte $lt $lte` compare a number with a number, a string with a string (by code point,
 *   PostgreSQL's "C" collation, so ISO dates order correctly); any other pair is false.
 */
import type { FieldCondition, FilterScalar, MetadataFilter } from './filter-types.js';

export function matchesFilter(filter: MetadataFilter, metadata: Record<string, unknown>): boolean {
  switch (filter.kind) {
    case 'and':
      return filter.filters.every((part) => matchesFilter(part, metadata));
    case 'or':
      return filter.filters.some((part) => matchesFilter(part, metadata));
    case 'not':
      return !matchesFilter(filter.filter, metadata);
    case 'field':
      return matchesCondition(filter.condition, valueAtPath(metadata, filter.path));
  }
}

const int32Min = -2_147_483_648;
const int32Max = 2_147_483_647;
/**
 * A path segment that picks an array element, as C's strtol accepts it whole: optional blanks
 * (isspace), an optional sign, digits.
 */
const integerSegment = /^[ \t\n\v\f\r]*[+-]?[0-9]+$/;

/**
 * Whether every segment of the path can only be an object key: none reads as an integer, which
 * could pick an array element. Indexes of values (jsonb containment, the embedded store's index)
 * can answer for such a path only.
 */
export function isPathOfObjectKeys(path: readonly string[]): boolean {
  return !path.some((segment) => integerSegment.test(segment));
}

/** The element index a path segment selects in an array of `length`, as jsonb `#>` decides it. */
function arrayIndex(segment: string, length: number): number | undefined {
  if (!integerSegment.test(segment)) return undefined;
  const parsed = Number(segment.trim());
  if (parsed < int32Min || parsed > int32Max) return undefined;
  const index = parsed >= 0 ? parsed : length + parsed;
  return index >= 0 && index < length ? index : undefined;
}

/** The value at `path` (jsonb `#>`), or undefined when the field is missing. */
export function valueAtPath(metadata: unknown, path: readonly string[]): unknown {
  let current: unknown = metadata;
  for (const segment of path) {
    if (Array.isArray(current)) {
      const index = arrayIndex(segment, current.length);
      if (index === undefined) return undefined;
      current = current[index];
    } else if (typeof current === 'object' && current !== null) {
      // Own keys only: "constructor" or "__proto__" must not reach Object.prototype.
      if (!Object.hasOwn(current, segment)) return undefined;
      current = (current as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return current;
}

/** jsonb `value @> scalar`: the value is the scalar, or an array with the scalar as an element. */
function containsScalar(value: unknown, scalar: FilterScalar): boolean {
  if (Array.isArray(value)) return value.some((element) => element === scalar);
  return value === scalar;
}

/**
 * Code-point order, as PostgreSQL's "C" collation compares UTF-8 bytes. JavaScript's `<` compares
 * UTF-16 units, which puts U+10000 and above (surrogates, 0xD800-0xDFFF) before U+E000-U+FFFF.
 */
export function compareCodePoints(left: string, right: string): number {
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index++) {
    let a = left.charCodeAt(index);
    let b = right.charCodeAt(index);
    if (a === b) continue;
    if (a >= 0xd800 && b >= 0xd800) {
      a = a >= 0xe000 ? a - 0x800 : a + 0x2000;
      b = b >= 0xe000 ? b - 0x800 : b + 0x2000;
    }
    return a - b;
  }
  return left.length - right.length;
}

function compareOrdered(value: unknown, operand: number | string): number | undefined {
  if (typeof value === 'number' && typeof operand === 'number') return value - operand;
  if (typeof value === 'string' && typeof operand === 'string') return compareCodePoints(value, operand);
  return undefined;
}

function matchesCondition(condition: FieldCondition, value: unknown): boolean {
  const present = value !== undefined;
  switch (condition.operator) {
    case '$exists':
      return present === condition.value;
    case '$eq':
      return present && containsScalar(value, condition.value);
    case '$ne':
      return !(present && containsScalar(value, condition.value));
    case '$in':
      return present && condition.values.some((scalar) => containsScalar(value, scalar));
    case '$nin':
      return !(present && condition.values.some((scalar) => containsScalar(value, scalar)));
    default: {
      const order = compareOrdered(value, condition.value);
      if (order === undefined) return false;
      if (condition.operator === '$gt') return order > 0;
      if (condition.operator === '$gte') return order >= 0;
      if (condition.operator === '$lt') return order < 0;
      return order <= 0;
    }
  }
}
