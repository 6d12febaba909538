/**
 * Every authenticated route and the access it demands (spec 5, api-contract 2). The scope-table
 * test drives each row with the wrong and the right credentials; each issue that adds routes adds
 * its rows here. `{id}` in a URL is replaced with a random UUID: the point is the auth answer,
 * which comes before the route looks anything up.
 */
export type Access = 'session' | 'any' | 'unpinned' | { scope: string };

export interface RouteRow {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  access: Access;
  payload?: unknown;
  /** The route ends the session that calls it, so the test logs in afresh for it. */
  endsSession?: boolean;
}

export const ROUTE_TABLE: RouteRow[] = [
  { method: 'GET', url: '/v1/auth/me', access: 'any' },
  { method: 'GET', url: '/v1/auth/whoami', access: 'any' },
  { method: 'POST', url: '/v1/auth/logout', access: 'session', endsSession: true },
  { method: 'POST', url: '/v1/auth/logout-all', access: 'session', endsSession: true },
  { method: 'POST', url: '/v1/auth/password', access: 'session', payload: { current_password: 'x', new_password: 'y' } },
  { method: 'GET', url: '/v1/auth/preferences', access: 'session' },
  { method: 'PUT', url: '/v1/auth/preferences', access: 'session', payload: { data: {} } },
  { method: 'GET', url: '/v1/admin/users', access: 'session' },
  { method: 'POST', url: '/v1/admin/users', access: 'session', payload: {} },
  { method: 'GET', url: '/v1/admin/users/{id}', access: 'session' },
  { method: 'PATCH', url: '/v1/admin/users/{id}', access: 'session', payload: {} },
  { method: 'DELETE', url: '/v1/admin/users/{id}', access: 'session' },
  { method: 'GET', url: '/v1/admin/api-keys', access: 'session' },
  { method: 'POST', url: '/v1/admin/api-keys', access: 'session', payload: {} },
  { method: 'GET', url: '/v1/admin/api-keys/{id}', access: 'session' },
  { method: 'PATCH', url: '/v1/admin/api-keys/{id}', access: 'session', payload: {} },
  { method: 'DELETE', url: '/v1/admin/api-keys/{id}', access: 'session' },
  { method: 'POST', url: '/v1/admin/api-keys/{id}/rotate', access: 'session' },
  { method: 'GET', url: '/v1/admin/audit', access: 'session' },
  { method: 'GET', url: '/v1/admin/settings', access: 'session' },
  { method: 'PATCH', url: '/v1/admin/settings', access: 'session', payload: { values: {} } },
  { method: 'POST', url: '/v1/admin/settings/test', access: 'session', payload: { values: {} } },
  { method: 'POST', url: '/v1/admin/settings/reset', access: 'session', payload: { keys: ['x'] } },
];

export const OPEN_ROUTES: Array<Pick<RouteRow, 'method' | 'url'>> = [
  { method: 'GET', url: '/health' },
  { method: 'GET', url: '/health/ready' },
  { method: 'GET', url: '/v1/auth/setup-status' },
  { method: 'GET', url: '/docs/json' },
];
