import { defineEntity, type InferEntity } from '@mikro-orm/core';

export const Setting = defineEntity({
  name: 'Setting',
  tableName: 'settings',
  properties: (p) => ({
    key: p.string().primary(),
    value: p.json<unknown>(),
    updatedAt: p.datetime(),
  }),
});
export type SettingRecord = InferEntity<typeof Setting>;
