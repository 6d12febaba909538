import { defineEntity, type InferEntity } from '@mikro-orm/core';

export const IdempotencyRecord = defineEntity({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_records',
  properties: (p) => ({
    id: p.uuid().primary(),
    /** The caller the key belongs to: `user:<id>` or `api_key:<id>`. */
    owner: p.string(),
    key: p.string(),
    method: p.string(),
    path: p.text(),
    requestHash: p.string(),
    /** SHA-256 of the caller's rights (`actorRights`) at the first request; null on records older than it. */
    rightsHash: p.string().nullable(),
    /** null while the first request is still running. */
    responseStatus: p.integer().nullable(),
    responseBody: p.text().nullable(),
    responseContentType: p.string().nullable(),
    createdAt: p.datetime(),
  }),
});
export type IdempotencyRecordRow = InferEntity<typeof IdempotencyRecord>;
