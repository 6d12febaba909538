/**
 * The range conditions of a metadata filter, as SQL a B-tree expression index over `chunks` can
 * serve (metadata-range-indexes.ts): a condition that holds for every row the filter passes, and
 * the indexes it needs. The filter's own SQL (filter-to-sql.ts) binds the path as a parameter,
 * which no expression index matches; here the path is written into the SQL text, so each path is
 * checked to hold only letters, digits, `_` and `-`.
 *
 * Equivalent to the filter's range test, or wider (the filter is still applied to every row):
 * - a number bound: `(metadata #> path) op bound` in jsonb order, where numbers compare as numbers
 *   and other types sort apart from them (strings and null below, booleans, arrays and objects
 *   above), so every number the filter passes passes here;
 * - a string bound: `(metadata #>> path) collate "C" op bound`, which for a string value is the
 *   filter's own comparison of its text by code point.
 * An `and` keeps the parts that have a condition, an `or` needs one in each part, `not` has none.
 */
import type { FieldFilter, MetadataFilter } from './filter-types.js';

export type RangeValueType = 'number' | 'string';
export type RangeComparison = '>' | '>=' | '<' | '<=';

export interface RangeBound {
  comparison: RangeComparison;
  bound: number | string;
}

/** The share of the collection's chunks whose value in `index` satisfies every `value comparison bound`; null when unknown. */
export type ShareOfRange = (index: RangeIndexSpec, bounds: RangeBound[]) => number | null;

export interface RangeIndexSpec {
  path: string[];
  type: RangeValueType;
  /** The indexed expression over `metadata`, exactly as the condition writes it. */
  expression: string;
}

export interface RangeScope {
  /** A boolean SQL expression over the `metadata` column, with `?` placeholders. */
  sql: string;
  params: unknown[];
  /** The indexes the condition reads, one per path and type. */
  indexes: RangeIndexSpec[];
  /**
   * The share of chunks the condition admits: an `and` of bounds on one field is the share of its
   * interval; an `and` of anything else the smallest of its parts', an `or` their sum. Null when a
   * share is unknown.
   */
  estimateShare(shareOf: ShareOfRange): number | null;
}

const safeSegment = /^[A-Za-z0-9_-]{1,64}$/;
const maxSegments = 8;
const sqlComparison: Record<'$gt' | '$gte' | '$lt' | '$lte', RangeComparison> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

/** `'{"a","b"}'::text[]`: written into SQL, so only for paths of `safeSegment`s. */
function pathLiteral(path: readonly string[]): string {
  return `'{${path.map((segment) => `"${segment}"`).join(',')}}'::text[]`;
}

export function rangeIndexExpression(path: readonly string[], type: RangeValueType): string {
  return type === 'number' ? `(metadata #> ${pathLiteral(path)})` : `((metadata #>> ${pathLiteral(path)}) collate "C")`;
}

export function isIndexablePath(path: readonly string[]): boolean {
  return path.length > 0 && path.length <= maxSegments && path.every((segment) => safeSegment.test(segment));
}

interface RenderedRange {
  sql: string;
  indexes: RangeIndexSpec[];
  estimateShare: RangeScope['estimateShare'];
  /** Set when the condition is bounds on one field, all to hold. */
  bounds?: { index: RangeIndexSpec; bounds: RangeBound[] };
}

/** The filter's range conditions as an indexable SQL condition, or null when it has none. */
export function rangeScope(filter: MetadataFilter): RangeScope | null {
  const params: unknown[] = [];
  const rendered = renderRange(filter, params);
  if (rendered === null) return null;
  const indexes = new Map(rendered.indexes.map((spec) => [`${spec.type}:${JSON.stringify(spec.path)}`, spec]));
  return { sql: rendered.sql, params, indexes: [...indexes.values()], estimateShare: rendered.estimateShare };
}

function joined(parts: RenderedRange[], operator: 'and' | 'or'): RenderedRange {
  const sql = `(${parts.map((part) => part.sql).join(` ${operator} `)})`;
  const indexes = parts.flatMap((part) => part.indexes);
  const first = parts[0]!.bounds;
  if (operator === 'and' && first && parts.every((part) => part.bounds?.index.expression === first.index.expression)) {
    const bounds = { index: first.index, bounds: parts.flatMap((part) => part.bounds!.bounds) };
    return { sql, indexes, bounds, estimateShare: (shareOf) => shareOf(bounds.index, bounds.bounds) };
  }
  return {
    sql,
    indexes,
    estimateShare: (shareOf) => {
      const shares = parts.map((part) => part.estimateShare(shareOf));
      if (shares.some((share) => share === null)) return null;
      const known = shares as number[];
      return operator === 'or' ? Math.min(1, known.reduce((total, share) => total + share, 0)) : Math.min(...known);
    },
  };
}

function renderRange(filter: MetadataFilter, params: unknown[]): RenderedRange | null {
  switch (filter.kind) {
    case 'and': {
      const parts = filter.filters.map((part) => renderRange(part, params)).filter((part) => part !== null);
      return parts.length === 0 ? null : joined(parts, 'and');
    }
    case 'or': {
      if (filter.filters.length === 0) return null;
      const startParams = params.length;
      const parts = filter.filters.map((part) => renderRange(part, params));
      if (parts.some((part) => part === null)) {
        params.length = startParams;
        return null;
      }
      return joined(parts as RenderedRange[], 'or');
    }
    case 'not':
      return null;
    case 'field':
      return renderField(filter, params);
  }
}

function renderField({ path, condition }: FieldFilter, params: unknown[]): RenderedRange | null {
  if (!(condition.operator in sqlComparison) || !isIndexablePath(path)) return null;
  const { operator, value } = condition as { operator: '$gt' | '$gte' | '$lt' | '$lte'; value: number | string };
  // A bound of ±Infinity (1e400 in JSON) has no jsonb number to compare with.
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  const type: RangeValueType = typeof value === 'number' ? 'number' : 'string';
  const expression = rangeIndexExpression(path, type);
  params.push(type === 'number' ? JSON.stringify(value) : value);
  const spec = { path: [...path], type, expression };
  const bounds = { index: spec, bounds: [{ comparison: sqlComparison[operator], bound: value }] };
  return {
    sql: `${expression} ${sqlComparison[operator]} ?::${type === 'number' ? 'jsonb' : 'text'}`,
    indexes: [spec],
    bounds,
    estimateShare: (shareOf) => shareOf(spec, bounds.bounds),
  };
}
