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

export interface SqlFragment {
  sql: string;
  params: unknown[];
}

const sqlComparison: Record<ComparisonOperator, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

/** `metadata` or `c.metadata`: a column reference written by our own code, never by a client. */
const columnReference = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

export function filterToSql(filter: MetadataFilter, metadataColumn: string): SqlFragment {
  if (!columnReference.test(metadataColumn)) throw new TypeError(`filterToSql: "${metadataColumn}" is not a column reference`);
  const params: unknown[] = [];
  const sql = renderFilter(filter, metadataColumn, params);
  return { sql, params };
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
