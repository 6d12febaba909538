import { ApiKey } from './api-key.js';
import { AuditEvent } from './audit-event.js';
import { Collection } from './collection.js';
import { Document } from './document.js';
import { IdempotencyRecord } from './idempotency-record.js';
import { Session } from './session.js';
import { Setting } from './setting.js';
import { User } from './user.js';

export type { UserRecord, UserRole } from './user.js';
export { USER_ROLES } from './user.js';
export type { ApiKeyRecord } from './api-key.js';
export type { AuditEventRecord } from './audit-event.js';
export { ApiKey, AuditEvent, Collection, Document, IdempotencyRecord, Session, Setting, User };
export type { CollectionRecord, ChunkStrategy, SearchMode } from './collection.js';
export { CHUNK_STRATEGIES, SEARCH_MODES } from './collection.js';
export type { DocumentRecord, DocumentStatus, DocumentProgress } from './document.js';
export { DOCUMENT_STATUSES } from './document.js';

export const entities = [User, Session, ApiKey, AuditEvent, IdempotencyRecord, Setting, Collection, Document];
