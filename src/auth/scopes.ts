import { scopeGrants } from './actor.js';

/**
 * The scopes an API key can hold (spec 5.6), `resource:action` with `*` for any. A scope naming
 * another resource or action would grant nothing: `document:uplod` made a key that could not
 * upload, and nothing said why.
 */
const KNOWN_SCOPES = [
  'collection:read', 'collection:write', 'collection:delete',
  'document:upload', 'document:read', 'document:delete',
  'query:read', 'chat:read', 'chat:write',
  'vector:write', 'vector:delete',
  'audit:read',
] as const;

const SCOPE_PATTERN = /^(\*|[a-z_]+):(\*|[a-z_]+)$/;

/** Why `scope` is refused, or null when it grants something: a known scope, or one that `*` widens to some. */
export function scopeRefusal(scope: string): string | null {
  const match = SCOPE_PATTERN.exec(scope);
  if (!match) return `Invalid scope "${scope}": expected resource:action${scope === '*' ? ' ("*:*" grants every scope)' : ''}`;
  const grantsSome = KNOWN_SCOPES.some((known) => scopeGrants([scope], known));
  return grantsSome ? null : `Unknown scope "${scope}": it grants nothing; known scopes are ${KNOWN_SCOPES.join(', ')}, with * for any resource or action`;
}
