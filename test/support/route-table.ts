/**
 * Every authenticated route and the access it demands (spec 5, api-contract 2). The scope-table
 * test drives each row with the wrong and the right credentials; each issue that adds routes adds
 * its rows here. `{id}` in a URL is replaced with a random UUID: the point is the auth answer,
 * which comes before the route looks anything up. `{name}` is a collection name that does not
 * exist: scope checks come before the lookup, so the scope answer is still what is tested.
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
  { method: 'GET', url: '/v1/admin/vector-storage', access: 'session' },
  { method: 'GET', url: '/v1/stats', access: 'unpinned' },
  { method: 'GET', url: '/v1/embeddings/models', access: 'any' },
  { method: 'GET', url: '/v1/collections', access: { scope: 'collection:read' } },
  { method: 'POST', url: '/v1/collections', access: { scope: 'collection:write' }, payload: {} },
  { method: 'GET', url: '/v1/collections/{name}', access: { scope: 'collection:read' } },
  { method: 'PATCH', url: '/v1/collections/{name}', access: { scope: 'collection:write' }, payload: {} },
  { method: 'DELETE', url: '/v1/collections/{name}', access: { scope: 'collection:delete' } },
  { method: 'POST', url: '/v1/collections/{name}/truncate', access: { scope: 'collection:delete' } },
  { method: 'GET', url: '/v1/collections/{name}/stats', access: { scope: 'collection:read' } },
  { method: 'GET', url: '/v1/collections/{name}/analytics', access: { scope: 'collection:read' } },
  { method: 'POST', url: '/v1/collections/{name}/documents', access: { scope: 'document:upload' } },
  { method: 'GET', url: '/v1/collections/{name}/documents', access: { scope: 'document:read' } },
  { method: 'GET', url: '/v1/collections/{name}/documents/{id}', access: { scope: 'document:read' } },
  { method: 'DELETE', url: '/v1/collections/{name}/documents/{id}', access: { scope: 'document:delete' } },
  { method: 'GET', url: '/v1/collections/{name}/documents/{id}/chunks', access: { scope: 'document:read' } },
  { method: 'GET', url: '/v1/collections/{name}/documents/{id}/elements', access: { scope: 'document:read' } },
  { method: 'GET', url: '/v1/documents/{id}', access: { scope: 'document:read' } },
  { method: 'POST', url: '/v1/collections/{name}/query', access: { scope: 'query:read' }, payload: { query: 'x' } },
  { method: 'POST', url: '/v1/query', access: { scope: 'query:read' }, payload: { query: 'x', collections: ['a'] } },
  { method: 'POST', url: '/v1/batch/query', access: { scope: 'query:read' }, payload: { queries: [{ collection: 'a', query: 'x' }] } },
  { method: 'POST', url: '/v1/collections/{name}/vectors/upsert', access: { scope: 'vector:write' }, payload: { vectors: [] } },
  { method: 'POST', url: '/v1/collections/{name}/vectors/delete', access: { scope: 'vector:delete' }, payload: { ids: [] } },
  // Documents at scale: batches, upload sessions, files, reprocessing (issue 4).
  { method: 'POST', url: '/v1/collections/{name}/documents/batch', access: { scope: 'document:upload' } },
  { method: 'GET', url: '/v1/collections/{name}/batches/{id}', access: { scope: 'document:read' } },
  { method: 'GET', url: '/v1/collections/{name}/batches/{id}/status', access: { scope: 'document:read' } },
  { method: 'DELETE', url: '/v1/collections/{name}/batches/{id}', access: { scope: 'document:delete' } },
  { method: 'POST', url: '/v1/collections/{name}/uploads', access: { scope: 'document:upload' }, payload: {} },
  { method: 'PUT', url: '/v1/collections/{name}/uploads/{id}/files', access: { scope: 'document:upload' } },
  { method: 'POST', url: '/v1/collections/{name}/uploads/{id}/complete', access: { scope: 'document:upload' } },
  { method: 'GET', url: '/v1/collections/{name}/uploads/{id}', access: { scope: 'document:read' } },
  { method: 'DELETE', url: '/v1/collections/{name}/uploads/{id}', access: { scope: 'document:delete' } },
  { method: 'POST', url: '/v1/collections/{name}/documents/{id}/reprocess', access: { scope: 'document:upload' } },
  { method: 'POST', url: '/v1/collections/{name}/reprocess', access: { scope: 'document:upload' } },
  { method: 'GET', url: '/v1/collections/{name}/documents/{id}/elements/{element_id}/content', access: { scope: 'document:read' } },
  // Providers: embedding presets, embedding cache, usage (issue 5).
  { method: 'GET', url: '/v1/admin/embedding-presets', access: 'session' },
  { method: 'POST', url: '/v1/admin/embedding-presets', access: 'session', payload: {} },
  { method: 'POST', url: '/v1/admin/embedding-presets/test', access: 'session', payload: {} },
  { method: 'GET', url: '/v1/admin/embedding-presets/{id}', access: 'session' },
  { method: 'PATCH', url: '/v1/admin/embedding-presets/{id}', access: 'session', payload: {} },
  { method: 'DELETE', url: '/v1/admin/embedding-presets/{id}', access: 'session' },
  { method: 'POST', url: '/v1/admin/embedding-presets/{id}/test', access: 'session' },
  { method: 'POST', url: '/v1/admin/settings/embedding-cache/purge', access: 'session' },
  { method: 'GET', url: '/v1/usage', access: { scope: 'audit:read' } },
  { method: 'GET', url: '/v1/status/usage', access: { scope: 'audit:read' } },
];

export const OPEN_ROUTES: Array<Pick<RouteRow, 'method' | 'url'>> = [
  { method: 'GET', url: '/health' },
  { method: 'GET', url: '/health/ready' },
  { method: 'GET', url: '/v1/auth/setup-status' },
  { method: 'GET', url: '/docs/json' },
];
