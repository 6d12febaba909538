import { Type, type TSchemaOptions } from 'typebox';

/**
 * A schema accepting exactly one of `values` (enumerations kept as `as const` arrays), written as
 * one `{type: "string", enum: [...]}`: a union of constants made validation report one error per
 * value, and Swagger UI and client generators read it as "any of" rather than as a choice.
 */
export function stringEnum<T extends readonly string[]>(values: T, options?: TSchemaOptions) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}
