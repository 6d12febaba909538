import { Type, type TSchemaOptions } from 'typebox';

/** A schema accepting exactly one of `values` (enumerations kept as `as const` arrays). */
export function literalUnion<T extends readonly string[]>(values: T, options?: TSchemaOptions) {
  return Type.Union(values.map((value) => Type.Literal(value)), options);
}
