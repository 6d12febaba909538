import { defineEntity, type InferEntity } from '@mikro-orm/core';

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: (p) => ({
    id: p.uuid().primary(),
    name: p.string(),
    prefix: p.string(),
    /** SHA-256 of the plaintext key: keys are 256-bit random, so a fast hash is safe and argon2 stays off the hot path. */
    keyHash: p.string().unique(),
    scopes: p.json<string[]>(),
    collection: p.string().nullable(),
    active: p.boolean(),
    expiresAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
    createdBy: p.uuid().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  }),
});
export type ApiKeyRecord = InferEntity<typeof ApiKey>;
