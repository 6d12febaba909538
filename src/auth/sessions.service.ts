import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { randomToken, sha256Hex } from '../crypto/tokens.js';
import { Session, User, type UserRecord } from '../db/entities/index.js';

export interface IssuedSession {
  id: string;
  /** The cookie value; only its hash is stored. */
  token: string;
  expiresAt: Date;
}

export async function createSession(em: EntityManager, userId: string, ttlHours: number): Promise<IssuedSession> {
  const token = randomToken();
  const now = new Date();
  const session = em.create(Session, {
    id: randomUUID(),
    tokenHash: sha256Hex(token),
    userId,
    createdAt: now,
    expiresAt: new Date(now.getTime() + ttlHours * 3_600_000),
  });
  await em.flush();
  return { id: session.id, token, expiresAt: session.expiresAt };
}

/** The live session and its user for a cookie value, or null (unknown, expired or user gone). */
export async function resolveSession(em: EntityManager, token: string): Promise<{ sessionId: string; user: UserRecord } | null> {
  const session = await em.findOne(Session, { tokenHash: sha256Hex(token) });
  if (!session || session.expiresAt.getTime() <= Date.now()) return null;
  const user = await em.findOne(User, { id: session.userId });
  return user ? { sessionId: session.id, user } : null;
}

export async function revokeSession(em: EntityManager, sessionId: string): Promise<void> {
  await em.nativeDelete(Session, { id: sessionId });
}

export async function revokeUserSessions(em: EntityManager, userId: string): Promise<number> {
  return em.nativeDelete(Session, { userId });
}

