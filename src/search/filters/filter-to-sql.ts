/**
 * Translates a `MetadataFilter` into a boolean SQL expression over a jsonb column, with the exact
 * semantics of match-filter.ts (documented there). Every value and path travels as a parameter
 * (knex `?` placeholders); only the trusted column reference is spliced in. Runs on PostgreSQL 15
 * and PGlite (17).
 *
 * Each leaf is written to be true or false, never NULL (a missing field gives NULL from `#>`,
 * which `coalesce` or `case` turns into false), so `not (...)` negates exactly as JavaScript's `!`.
 */
import type { ComparisonOperator, FieldFilter, MetadataFilter } from './filter-types.js';
import { isPathOfObjectKeys } from './match-filter.js';

export interface SqlFragment {
  sql: string;
  params: unknown[];
  /** Whether `sql` holds a containment condition a GIN index over the column can serve. */
  containment: boolean;
}

const sqlComparison: Record<ComparisonOperator, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

/** `metadata` or `c.metadata`: a column reference written by our own code, never by a client. */
const columnReference = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

export function filterToSql(filter: MetadataFilter, metadataColumn: string): SqlFragment {
  if (!columnReference.test(metadataColumn)) throw new TypeError(`filterToSql: "${metadataColumn}" is not a column reference`);
  const params: unknown[] = [];
  const sql = renderFilter(filter, metadataColumn, params);
  const containment = renderContainment(filter, metadataColumn, params);
  return { sql: containment === null ? sql : `(${sql} and ${containment})`, params, containment: containment !== null };
}

/** The filter's containment conditions alone (below), which admit every row the filter passes; null when it has none. */
export function containmentSql(filter: MetadataFilter, metadataColumn: string): { sql: string; params: unknown[] } | null {
  if (!columnReference.test(metadataColumn)) throw new TypeError(`containmentSql: "${metadataColumn}" is not a column reference`);
  const params: unknown[] = [];
  const sql = renderContainment(filter, metadataColumn, params);
  return sql === null ? null : { sql, params };
}

/** `{"a": {"b": <value>}}` for the path a.b, as JSON text (keys such as `__proto__` stay keys). */
function nestedAtPath(path: readonly string[], value: unknown): string {
  return path.reduceRight((inner, segment) => `{${JSON.stringify(segment)}:${inner}}`, JSON.stringify(value));
}

/**
 * Containment conditions (`column @> any(...)`) for the filter's equality and membership conditions,
 * joined as the filter joins them, or null: an `and` keeps those of its parts that have one, an `or`
 * has one only when each part has, `not` never does. The filter's own expression reads each field
 * with `#>`, which no index serves, while a GIN index over the column (jsonb_path_ops) finds the rows
 * containing a value, so a filter few rows pass need not test every row of the collection. The
 * containment is added beside the filter's expression, never instead of it.
 *
 * Equivalent: on a path of object keys, `(column #> path) @> scalar` holds when the value there is
 * the scalar or an array holding it; `{path: scalar}` contains the first, `{path: [scalar]}` the
 * second (a nested array does not contain a bare scalar). A segment that reads as an integer may
 * pick an array element (`isPathOfObjectKeys`), which containment cannot express, so such a path gets
 * no condition. In jsonb_path_ops both forms hash to the same entry, so each value's entry is read
 * twice, and the bitmap of rows merges the two.
 */
function renderContainment(filter: MetadataFilter, column: string, params: unknown[]): string | null {
  switch (filter.kind) {
    case 'and': {
      const parts = filter.filters.map((part) => renderContainment(part, column, params)).filter((part) => part !== null);
      return parts.length === 0 ? null : `(${parts.join(' and ')})`;
    }
    case 'or': {
      if (filter.filters.length === 0) return null;
      const start = params.length;
      const parts = filter.filters.map((part) => renderContainment(part, column, params));
      if (parts.some((part) => part === null)) {
        params.length = start;
        return null;
      }
      return `(${parts.join(' or ')})`;
    }
    case 'not':
      return null;
    case 'field': {
      const { path, condition } = filter;
      if (!isPathOfObjectKeys(path)) return null;
      const scalars = condition.operator === '$eq' ? [condition.value] : condition.operator === '$in' ? condition.values : [];
      if (scalars.length === 0) return null;
      params.push(scalars.flatMap((scalar) => [nestedAtPath(path, scalar), nestedAtPath(path, [scalar])]));
      return `${column} @> any(?::jsonb[])`;
    }
  }
}

function renderFilter(filter: MetadataFilter, column: string, params: unknown[]): string {
  switch (filter.kind) {
    case 'and':
      if (filter.filters.length === 0) return 'true';
      return `(${filter.filters.map((part) => renderFilter(part, column, params)).join(' and ')})`;
    case 'or':
      if (filter.filters.length === 0) return 'false';
      return `(${filter.filters.map((part) => renderFilter(part, column, params)).join(' or ')})`;
    case 'not':
      return `(not ${renderFilter(filter.filter, column, params)})`;
    case 'field':
      return renderField(filter, column, params);
  }
}

function renderField({ path, condition }: FieldFilter, column: string, params: unknown[]): string {
  // The field's value (jsonb, NULL when missing); each use binds the path once more.
  const value = (): string => {
    params.push(path);
    return `(${column} #> ?::text[])`;
  };
  switch (condition.operator) {
    case '$exists':
      return `(${value()} is ${condition.value ? 'not ' : ''}null)`;
    case '$eq':
    case '$ne': {
      // jsonb `@>` with a scalar on the right: equal scalars, or an array holding the scalar.
      const sql = `coalesce(${value()} @> ?::jsonb, false)`;
      params.push(JSON.stringify(condition.value));
      return condition.operator === '$eq' ? sql : `(not ${sql})`;
    }
    case '$in':
    case '$nin': {
      if (condition.values.length === 0) return condition.operator === '$in' ? 'false' : 'true';
      const sql = `coalesce(${value()} @> any(?::jsonb[]), false)`;
      params.push(condition.values.map((scalar) => JSON.stringify(scalar)));
      return condition.operator === '$in' ? sql : `(not ${sql})`;
    }
    default: {
      const operator = sqlComparison[condition.operator];
      // `case` evaluates the cast only for values of the right type (a cast of a string to
      // numeric would fail). numeric holds every double exactly, so order matches JavaScript's.
      if (typeof condition.value === 'number') {
        const sql = `(case when jsonb_typeof(${value()}) = 'number' then ${value()}::numeric ${operator} ?::numeric else false end)`;
        params.push(String(condition.value));
        return sql;
      }
      const sql = `(case when jsonb_typeof(${value()}) = 'string' then (${value()} #>> '{}') collate "C" ${operator} ?::text else false end)`;
      params.push(condition.value);
      return sql;
    }
  }
}
