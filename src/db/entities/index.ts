import { ApiKey } from './api-key.js';
import { AuditEvent } from './audit-event.js';
import { IdempotencyRecord } from './idempotency-record.js';
import { Session } from './session.js';
import { Setting } from './setting.js';
import { User } from './user.js';

export type { UserRecord, UserRole } from './user.js';
export { USER_ROLES } from './user.js';
export type { ApiKeyRecord } from './api-key.js';
export type { AuditEventRecord } from './audit-event.js';
export { ApiKey, AuditEvent, IdempotencyRecord, Session, Setting, User };

export const entities = [User, Session, ApiKey, AuditEvent, IdempotencyRecord, Setting];
