import { defineEntity, type InferEntity } from '@mikro-orm/core';

export const AuditEvent = defineEntity({
  name: 'AuditEvent',
  tableName: 'audit_events',
  properties: (p) => ({
    id: p.uuid().primary(),
    actorId: p.uuid().nullable(),
    actorType: p.string(),
    action: p.string(),
    resourceType: p.string(),
    resourceId: p.string().nullable(),
    details: p.json<Record<string, unknown>>(),
    createdAt: p.datetime(),
  }),
});
export type AuditEventRecord = InferEntity<typeof AuditEvent>;
