import { Type, type TSchema } from 'typebox';

/*
 * Pieces of the documented success bodies (`config.openapi.response`, src/http/openapi.ts) that
 * every area uses.
 */

/** A moment, as JSON writes a Date. */
export const Timestamp = Type.String({ format: 'date-time' });

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A page of a list (`page()` of src/http/pagination.ts). */
export function PageOf<T extends TSchema>(item: T) {
  return Type.Object({
    data: Type.Array(item),
    total: Type.Integer({ minimum: 0, description: 'the number of items in the whole list, on every page' }),
    limit: Type.Integer({ minimum: 1 }),
    offset: Type.Integer({ minimum: 0 }),
  }, { additionalProperties: false });
}
