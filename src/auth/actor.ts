import { ForbiddenError, MissingScopeError, PinnedCollectionDeletedError, PinnedKeyError } from '../errors.js';
import type { UserRole } from '../db/entities/user.js';

export interface UserActor {
  kind: 'user';
  userId: string;
  email: string;
  role: UserRole;
  sessionId: string;
}

export interface ApiKeyActor {
  kind: 'api_key';
  keyId: string;
  name: string;
  prefix: string;
  scopes: string[];
  /** Name of the collection the key is pinned to, if any: set means pinned. */
  collection: string | null;
  /** Id of that collection; null while `collection` is set: it was deleted, and the key is refused. */
  collectionId: string | null;
  createdBy: string | null;
}

export type Actor = UserActor | ApiKeyActor;

/** What a route demands of its caller. */
export type RouteAccess =
  | { kind: 'open' }
  | { kind: 'authenticated'; refusePinned?: boolean }
  | { kind: 'session'; role?: UserRole }
  | { kind: 'scope'; scope: string; refusePinned?: boolean };

/** Scopes a viewer's session has; admins have `*:*`. */
const VIEWER_SCOPES = ['collection:read', 'document:read', 'query:read', 'chat:read', 'audit:read'];

export function actorOwner(actor: Actor): string {
  return actor.kind === 'user' ? `user:${actor.userId}` : `api_key:${actor.keyId}`;
}

/**
 * Everything that decides what the caller may do, in one canonical string: two requests of the
 * same caller with equal rights strings are allowed the same things. Scopes are sorted, since an
 * update that reorders them changes nothing. A new kind of right on the actor belongs here too.
 */
export function actorRights(actor: Actor): string {
  return actor.kind === 'user'
    ? JSON.stringify({ role: actor.role })
    // The pin's id only for pinned keys, so that the rights of unpinned keys read as before.
    : JSON.stringify({ scopes: [...actor.scopes].sort(), collection: actor.collection, ...(actor.collection !== null && { collectionId: actor.collectionId }) });
}

export function actorId(actor: Actor): string {
  return actor.kind === 'user' ? actor.userId : actor.keyId;
}

function matches(pattern: string, value: string): boolean {
  return pattern === '*' || pattern === value;
}

/** `resource:action` scope matching with `*` as a wildcard on either side. */
export function scopeGrants(granted: readonly string[], required: string): boolean {
  const [resource, action] = required.split(':');
  return granted.some((scope) => {
    const [grantedResource, grantedAction] = scope.split(':');
    return grantedResource !== undefined && grantedAction !== undefined
      && matches(grantedResource, resource ?? '') && matches(grantedAction, action ?? '');
  });
}

export function actorScopes(actor: Actor): readonly string[] {
  if (actor.kind === 'api_key') return actor.scopes;
  return actor.role === 'admin' ? ['*:*'] : VIEWER_SCOPES;
}

export function assertAccess(actor: Actor, access: RouteAccess): void {
  if (access.kind === 'open') return;
  if (access.kind === 'authenticated') {
    if (access.refusePinned && actor.kind === 'api_key' && actor.collection !== null) throw new PinnedKeyError(actor.collection);
    return;
  }
  if (access.kind === 'session') {
    if (actor.kind !== 'user') throw new ForbiddenError('This endpoint requires an admin session; API keys are not accepted');
    if (access.role === 'admin' && actor.role !== 'admin') throw new ForbiddenError('This endpoint requires the admin role');
    return;
  }
  if (access.refusePinned && actor.kind === 'api_key' && actor.collection !== null) {
    throw new PinnedKeyError(actor.collection);
  }
  if (scopeGrants(actorScopes(actor), access.scope)) return;
  if (actor.kind === 'api_key') throw new MissingScopeError(access.scope);
  throw new ForbiddenError(`Your role does not allow ${access.scope}`);
}

/**
 * Collection routes call this with the name asked for and the collection found under it (null:
 * none). A pinned key may act only inside the collection it was pinned to, compared by id: a
 * collection created again under a deleted one's name is another collection. The id is the one
 * resolved for this request, so warm key or collection caches cannot let the new one through.
 * Call it before answering 404, so that a pinned key learns nothing about other collections.
 */
export function assertCollectionAccess(actor: Actor, name: string, found: { id: string } | null): void {
  if (actor.kind !== 'api_key' || actor.collection === null) return;
  if (name !== actor.collection) throw new PinnedKeyError(actor.collection);
  // Names are unique and never change, so no collection or another one under the pin's name
  // means the pinned collection is gone, whether or not the key's record says so yet.
  if (actor.collectionId === null || found?.id !== actor.collectionId) throw new PinnedCollectionDeletedError(actor.collection);
}

/**
 * The collection a caller is confined to, or null when it may see every collection. A key whose
 * pinned collection is known to be deleted is confined to nothing, and refused.
 */
export function pinnedCollection(actor: Actor): { name: string; id: string } | null {
  if (actor.kind !== 'api_key' || actor.collection === null) return null;
  if (actor.collectionId === null) throw new PinnedCollectionDeletedError(actor.collection);
  return { name: actor.collection, id: actor.collectionId };
}
