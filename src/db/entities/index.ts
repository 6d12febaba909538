import { ApiKey } from './api-key.js';
import { AuditEvent } from './audit-event.js';
import { IdempotencyRecord } from './idempotency-record.js';
import { Session } from './session.js';
import { Setting } from './setting.js';
import { User } from './user.js';

export { ApiKey, AuditEvent, IdempotencyRecord, Session, Setting, User };

export const entities = [User, Session, ApiKey, AuditEvent, IdempotencyRecord, Setting];
