import type { RouteAccess } from '../auth/actor.js';

/** Route `config` values, so that every route states its access rule in one word. */
export const OPEN = { access: { kind: 'open' } satisfies RouteAccess };
export const SESSION = { access: { kind: 'session' } satisfies RouteAccess };
export const ADMIN_SESSION = { access: { kind: 'session', role: 'admin' } satisfies RouteAccess };

export function scope(required: string, options: { refusePinned?: boolean } = {}) {
  return { access: { kind: 'scope', scope: required, ...options } satisfies RouteAccess };
}

/** Session or any valid API key (`S/K` in the specification). */
export const ANY_CALLER = { access: { kind: 'authenticated' } satisfies RouteAccess };
/** Session or any API key that is not pinned to a collection (cross-collection status endpoints). */
export const ANY_UNPINNED_CALLER = { access: { kind: 'authenticated', refusePinned: true } satisfies RouteAccess };
