import { defineEntity, type InferEntity } from '@mikro-orm/core';

export const USER_ROLES = ['admin', 'viewer'] as const;
export type UserRole = (typeof USER_ROLES)[number];

export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: (p) => ({
    id: p.uuid().primary(),
    email: p.string().unique(),
    passwordHash: p.text(),
    displayName: p.string().nullable(),
    role: p.string().$type<UserRole>(),
    /** Free-form preferences without the sensitive paths (those live encrypted below). */
    preferences: p.json<Record<string, unknown>>(),
    /** `chat.openai_key`, encrypted with MASTER_KEY (see src/crypto/secret-box.ts). */
    chatOpenaiKeySealed: p.text().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  }),
});
export type UserRecord = InferEntity<typeof User>;
