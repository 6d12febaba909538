/** The documented answers of the raw-vector routes (api-contract 5: upsert 200 `{upserted}`, delete 200 `{deleted}`). */
import { Type } from 'typebox';

export const VectorUpsertResponse = Type.Object({
  upserted: Type.Integer({ minimum: 0, description: 'the vectors written, new or replaced' }),
}, { additionalProperties: false });

export const VectorDeleteResponse = Type.Object({
  deleted: Type.Integer({ minimum: 0, description: 'the vectors removed; unknown ids and ids of document chunks are not counted' }),
}, { additionalProperties: false });
