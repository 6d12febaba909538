import { defineEntity, type InferEntity } from '@mikro-orm/core';

export const Session = defineEntity({
  name: 'Session',
  tableName: 'sessions',
  properties: (p) => ({
    id: p.uuid().primary(),
    /** SHA-256 of the cookie value; the value itself is never stored. */
    tokenHash: p.string().unique(),
    userId: p.uuid().index(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
  }),
});
export type SessionRecord = InferEntity<typeof Session>;
