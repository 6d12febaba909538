/**
 * A metadata filter in the language of api-contract section 3, validated by `parseFilter`:
 * `{"field": value}` is equality; operators `$eq $ne $gt $gte $lt $lte $in $nin $exists`;
 * combinators `$and $or $not`. Field names may be dotted paths into nested metadata.
 *
 * The JSON a client sends is converted once, at the edge, into this tree: every evaluator
 * (`matchesFilter` in JavaScript, `filterToSql` for jsonb, a vector store plugin's own query
 * language) walks the same small set of node kinds instead of re-interpreting raw JSON.
 * Semantics shared by every evaluator are described in match-filter.ts.
 */

/** A JSON scalar: what equality and `$in` compare against. */
export type FilterScalar = string | number | boolean | null;

export type EqualityOperator = '$eq' | '$ne';
export type ComparisonOperator = '$gt' | '$gte' | '$lt' | '$lte';
export type MembershipOperator = '$in' | '$nin';

export type FieldCondition =
  | { operator: EqualityOperator; value: FilterScalar }
  | { operator: ComparisonOperator; value: number | string }
  | { operator: MembershipOperator; values: FilterScalar[] }
  | { operator: '$exists'; value: boolean };

export type FieldOperator = FieldCondition['operator'];

export interface FieldFilter {
  kind: 'field';
  /** The field as the client wrote it (`author.name`), for messages. */
  field: string;
  /** The field split on dots: the path into the metadata object (`['author', 'name']`). */
  path: string[];
  condition: FieldCondition;
}

export interface AllOfFilter {
  kind: 'and';
  filters: MetadataFilter[];
}

export interface AnyOfFilter {
  kind: 'or';
  filters: MetadataFilter[];
}

export interface NotFilter {
  kind: 'not';
  filter: MetadataFilter;
}

export type MetadataFilter = FieldFilter | AllOfFilter | AnyOfFilter | NotFilter;
