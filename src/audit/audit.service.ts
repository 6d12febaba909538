import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { actorId, type Actor } from '../auth/actor.js';
import { AuditEvent, type AuditEventRecord } from '../db/entities/index.js';

export interface AuditEntry {
  action: string;
  resourceType: string;
  resourceId?: string | null;
  details?: Record<string, unknown>;
}

/** Records an admin action in the caller's unit of work; it is written with the change it describes. */
export function recordAudit(em: EntityManager, actor: Actor | null, entry: AuditEntry): void {
  em.create(AuditEvent, {
    id: randomUUID(),
    actorId: actor ? actorId(actor) : null,
    actorType: actor ? actor.kind : 'anonymous',
    action: entry.action,
    resourceType: entry.resourceType,
    resourceId: entry.resourceId ?? null,
    details: entry.details ?? {},
    createdAt: new Date(),
  });
}

export interface AuditQuery {
  action?: string | undefined;
  actorId?: string | undefined;
  resourceType?: string | undefined;
  limit: number;
  offset: number;
}

export async function listAuditEvents(em: EntityManager, query: AuditQuery): Promise<{ data: AuditEventRecord[]; total: number }> {
  const where: Record<string, unknown> = {};
  if (query.action) where.action = query.action;
  if (query.actorId) where.actorId = query.actorId;
  if (query.resourceType) where.resourceType = query.resourceType;
  const [data, total] = await em.findAndCount(AuditEvent, where, {
    orderBy: { createdAt: 'desc', id: 'desc' }, limit: query.limit, offset: query.offset,
  });
  return { data, total };
}

export function serializeAuditEvent(event: AuditEventRecord) {
  return {
    id: event.id,
    actor_id: event.actorId,
    actor_type: event.actorType,
    action: event.action,
    resource_type: event.resourceType,
    resource_id: event.resourceId,
    details: event.details,
    created_at: event.createdAt.toISOString(),
  };
}
