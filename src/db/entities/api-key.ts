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
    /** Name of the collection the key is pinned to: set means pinned, whatever `collectionId` holds. */
    collection: p.string().nullable(),
    /**
     * The pinned collection itself (names are reused after a delete). Null while `collection` is
     * set: that collection was deleted, and the key is refused everywhere (migration 0013).
     */
    collectionId: p.uuid().nullable(),
    active: p.boolean(),
    expiresAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
    createdBy: p.uuid().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  }),
});
export type ApiKeyRecord = InferEntity<typeof ApiKey>;
