import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { recordAudit } from '../audit/audit.service.js';
import { randomToken, sha256Hex } from '../crypto/tokens.js';
import { isCollectionName } from '../collections/collection-input.js';
import { ApiKey, Collection, type ApiKeyRecord } from '../db/entities/index.js';
import { BadRequestError, NotFoundError } from '../errors.js';
import type { Actor, ApiKeyActor } from './actor.js';
import type { ApiKeyUsageTracker } from './api-key-usage-tracker.js';
import { scopeRefusal } from './scopes.js';

export const API_KEY_PREFIX = 'svc_sk_';
export const API_KEY_DISPLAY_PREFIX_LENGTH = 12;
/** PostgreSQL's name for the foreign key of api_keys.collection_id (migration 0013). */
const PIN_FOREIGN_KEY = 'api_keys_collection_id_fkey';

const missingPinTarget = (name: string | null) => new NotFoundError(`Collection ${name} not found: a key can only be pinned to an existing collection`);

export interface ApiKeyInput {
  name?: string | undefined;
  scopes?: string[] | undefined;
  expires_at?: string | null | undefined;
  collection?: string | null | undefined;
  active?: boolean | undefined;
}

interface CachedKey {
  record: ApiKeyRecord;
  loadedAt: number;
}

/**
 * API keys: minted by an admin, shown once, stored as SHA-256. Lookups are answered from a
 * short-lived in-memory cache so that a request costs no database round trip; any change made
 * through this process drops the cached entry at once, and other replicas see it within `cacheMs`.
 */
export class ApiKeyService {
  private readonly cache = new Map<string, CachedKey>();

  constructor(
    private readonly usage: ApiKeyUsageTracker,
    private readonly cacheMs: number,
  ) {}

  private forget(keyHash: string): void {
    this.cache.delete(keyHash);
  }

  private static validate(input: ApiKeyInput): void {
    if (input.name !== undefined && input.name.trim() === '') throw new BadRequestError('name must not be empty');
    for (const scope of input.scopes ?? []) {
      const refusal = scopeRefusal(scope);
      if (refusal) throw new BadRequestError(refusal);
    }
    if (input.collection && !isCollectionName(input.collection)) {
      throw new BadRequestError('collection must be 1-64 characters of letters, digits, "_" or "-"');
    }
    if (input.expires_at) {
      const time = Date.parse(input.expires_at);
      if (Number.isNaN(time)) throw new BadRequestError('expires_at must be an RFC 3339 timestamp');
    }
  }

  /**
   * The pin an input asks for, as the collection's name and id. A pin names an existing collection
   * (404 otherwise): a pin to a name no collection has yet would grant whatever is later created
   * under it. Null unpins.
   */
  private static async resolvePin(em: EntityManager, name: string | null): Promise<{ collection: string | null; collectionId: string | null }> {
    if (name === null) return { collection: null, collectionId: null };
    const collection = await em.findOne(Collection, { name }, { fields: ['id', 'name'] });
    if (!collection) throw missingPinTarget(name);
    return { collection: collection.name, collectionId: collection.id };
  }

  /** Writes a key: a pinned collection deleted since resolvePin fails its foreign key (migration 0013), a 404 too. */
  private static async flushPinned(em: EntityManager, collection: string | null): Promise<void> {
    try {
      await em.flush();
    } catch (error) {
      if ((error as { constraint?: string }).constraint === PIN_FOREIGN_KEY) throw missingPinTarget(collection);
      throw error;
    }
  }

  private static mint(): { key: string; keyHash: string; prefix: string } {
    const key = `${API_KEY_PREFIX}${randomToken(32)}`;
    return { key, keyHash: sha256Hex(key), prefix: key.slice(0, API_KEY_DISPLAY_PREFIX_LENGTH) };
  }

  async create(em: EntityManager, actor: Actor, input: ApiKeyInput & { name: string }): Promise<{ record: ApiKeyRecord; key: string }> {
    ApiKeyService.validate(input);
    // A key dead from birth is a mistake; an update may still set a past time to expire a key now.
    if (input.expires_at && Date.parse(input.expires_at) <= Date.now()) throw new BadRequestError('expires_at is in the past: the key could never be used');
    const pin = await ApiKeyService.resolvePin(em, input.collection ?? null);
    const minted = ApiKeyService.mint();
    const now = new Date();
    const record = em.create(ApiKey, {
      id: randomUUID(),
      name: input.name.trim(),
      prefix: minted.prefix,
      keyHash: minted.keyHash,
      scopes: input.scopes && input.scopes.length > 0 ? [...new Set(input.scopes)] : ['*:*'],
      ...pin,
      active: true,
      expiresAt: input.expires_at ? new Date(input.expires_at) : null,
      lastUsedAt: null,
      createdBy: actor.kind === 'user' ? actor.userId : null,
      createdAt: now,
      updatedAt: now,
    });
    recordAudit(em, actor, { action: 'api_key.create', resourceType: 'api_key', resourceId: record.id, details: { name: record.name } });
    await ApiKeyService.flushPinned(em, pin.collection);
    return { record, key: minted.key };
  }

  async list(em: EntityManager, limit: number, offset: number): Promise<{ data: ApiKeyRecord[]; total: number }> {
    await this.usage.flushBeforeRead();
    const [data, total] = await em.findAndCount(ApiKey, {}, { orderBy: { createdAt: 'desc', id: 'desc' }, limit, offset });
    return { data, total };
  }

  async get(em: EntityManager, id: string): Promise<ApiKeyRecord> {
    await this.usage.flushBeforeRead();
    const record = await em.findOne(ApiKey, { id });
    if (!record) throw new NotFoundError(`API key ${id} not found`);
    return record;
  }

  async update(em: EntityManager, actor: Actor, id: string, input: ApiKeyInput): Promise<ApiKeyRecord> {
    ApiKeyService.validate(input);
    const record = await this.get(em, id);
    const pin = input.collection === undefined ? undefined : await ApiKeyService.resolvePin(em, input.collection);
    if (input.name !== undefined) record.name = input.name.trim();
    if (input.scopes !== undefined) record.scopes = input.scopes.length > 0 ? [...new Set(input.scopes)] : ['*:*'];
    if (input.expires_at !== undefined) record.expiresAt = input.expires_at ? new Date(input.expires_at) : null;
    if (pin) Object.assign(record, pin);
    if (input.active !== undefined) record.active = input.active;
    record.updatedAt = new Date();
    recordAudit(em, actor, { action: 'api_key.update', resourceType: 'api_key', resourceId: id, details: { fields: Object.keys(input) } });
    await ApiKeyService.flushPinned(em, record.collection ?? null);
    this.forget(record.keyHash);
    return record;
  }

  async rotate(em: EntityManager, actor: Actor, id: string): Promise<{ record: ApiKeyRecord; key: string }> {
    const record = await this.get(em, id);
    const previousHash = record.keyHash;
    const minted = ApiKeyService.mint();
    record.keyHash = minted.keyHash;
    record.prefix = minted.prefix;
    record.updatedAt = new Date();
    recordAudit(em, actor, { action: 'api_key.rotate', resourceType: 'api_key', resourceId: id });
    await em.flush();
    this.forget(previousHash);
    return { record, key: minted.key };
  }

  async delete(em: EntityManager, actor: Actor, id: string): Promise<void> {
    const record = await this.get(em, id);
    em.remove(record);
    recordAudit(em, actor, { action: 'api_key.delete', resourceType: 'api_key', resourceId: id, details: { name: record.name } });
    await em.flush();
    this.forget(record.keyHash);
  }

  /**
   * The actor for a bearer token, or null when the key is unknown, inactive or expired. `fork` is
   * called only when the key is not cached: a fork per request was a measurable part of a query.
   */
  async authenticate(fork: () => EntityManager, token: string): Promise<ApiKeyActor | null> {
    if (!token.startsWith(API_KEY_PREFIX)) return null;
    const keyHash = sha256Hex(token);
    const now = Date.now();
    let cached = this.cache.get(keyHash);
    if (!cached || now - cached.loadedAt > this.cacheMs) {
      const record = await fork().findOne(ApiKey, { keyHash }, { disableIdentityMap: true });
      if (!record) {
        this.forget(keyHash);
        return null;
      }
      cached = { record, loadedAt: now };
      this.cache.set(keyHash, cached);
    }
    const { record } = cached;
    if (!record.active) return null;
    if (record.expiresAt && record.expiresAt.getTime() <= now) return null;
    this.usage.markUsed(record.id, new Date(now));
    return {
      kind: 'api_key',
      keyId: record.id,
      name: record.name,
      prefix: record.prefix,
      scopes: record.scopes,
      collection: record.collection ?? null,
      collectionId: record.collectionId ?? null,
      createdBy: record.createdBy ?? null,
    };
  }
}

export function serializeApiKey(record: ApiKeyRecord) {
  return {
    id: record.id,
    name: record.name,
    prefix: record.prefix,
    scopes: record.scopes,
    collection: record.collection,
    /** The pinned collection was deleted: the key is refused until it is pinned again or unpinned. */
    collection_deleted: Boolean(record.collection) && !record.collectionId,
    active: record.active,
    expires_at: record.expiresAt?.toISOString() ?? null,
    last_used_at: record.lastUsedAt?.toISOString() ?? null,
    created_by: record.createdBy,
    created_at: record.createdAt.toISOString(),
    updated_at: record.updatedAt.toISOString(),
  };
}

/**
 * Whether the collection a key is pinned to was deleted, read from the database: the key's
 * record may be cached from before the delete, when the foreign key had not yet cleared its id.
 */
export async function pinnedCollectionDeleted(em: EntityManager, actor: ApiKeyActor): Promise<boolean> {
  if (actor.collection === null) return false;
  return actor.collectionId === null || await em.count(Collection, { id: actor.collectionId }) === 0;
}
