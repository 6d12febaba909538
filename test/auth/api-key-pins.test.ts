/**
 * A pin is to a collection, not to a name: a key pinned to a collection that was deleted is
 * refused everywhere, also in a collection created again under the same name, and a key cannot
 * be pinned to a collection that does not exist (it would gain whatever is later given the name).
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import {
  adminTestApp, bearer, createApiKey, createTestCollection, multipartUpload, testBackends, waitForIngestion,
} from '../support/test-app.js';

const DELETED = 'API key is pinned to collection pinx, which was deleted';
const TEXT = 'The lighthouse keeper logs the fog horn hours.';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    // Caches warmer than the test is long: the old key's record predates the delete throughout.
    const { app, cookie, admin } = await adminTestApp(t, backend, { apiKeyCacheMs: 600_000, collectionCacheMs: 600_000 });
    const keyCount = async () => (await app.inject({ url: '/v1/admin/api-keys', headers: admin })).json().total as number;
    const upload = (collection: string, headers: Record<string, string>) => {
      const body = multipartUpload([{ filename: 'keeper.txt', content: TEXT, contentType: 'text/plain' }]);
      return app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...headers, ...body.headers }, payload: body.payload });
    };
    const query = (headers: Record<string, string>) =>
      app.inject({ method: 'POST', url: '/v1/collections/pinx/query', headers, payload: { query: 'fog horn', search_mode: 'keyword', skip_cache: true } });
    const whoami = async (key: string) => (await app.inject({ url: '/v1/auth/whoami', headers: bearer(key) })).json();

    await t.test('a pin to a collection that does not exist is 404 and writes nothing', async (t) => {
      const before = await keyCount();
      const created = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: admin, payload: { name: 'k', collection: 'nope' } });
      assertError(t, created, 404, /Collection nope not found/, 'create');
      t.equal(await keyCount(), before, 'no key was created');

      const key = await createApiKey(app, cookie, { name: 'unpinned' });
      const patched = await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${key.id}`, headers: admin, payload: { name: 'renamed', collection: 'nope' } });
      assertError(t, patched, 404, /Collection nope not found/, 'update');
      t.match((await app.inject({ url: `/v1/admin/api-keys/${key.id}`, headers: admin })).json(), { name: 'unpinned', collection: null }, 'the key is unchanged');
    });

    await t.test('a key pinned to a deleted collection is refused in the one created again under its name', async (t) => {
      await createTestCollection(app, admin, { name: 'pinx' });
      const old = await createApiKey(app, cookie, { name: 'old', collection: 'pinx', scopes: ['collection:*', 'document:*', 'query:read', 'audit:read'] });
      t.equal((await query(bearer(old.key))).statusCode, 200, 'the key works while its collection exists (and is cached)');
      t.match(await whoami(old.key), { collection: 'pinx', collection_deleted: false });
      t.match((await app.inject({ url: '/v1/collections', headers: bearer(old.key) })).json(), { total: 1, data: [{ name: 'pinx' }] });
      t.match((await app.inject({ url: '/v1/usage', headers: bearer(old.key) })).json(), { by_collection: [{ collection: 'pinx' }] });

      t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/pinx', headers: admin })).statusCode, 204);
      assertError(t, await query(bearer(old.key)), 403, DELETED, 'query while no collection has the name');
      assertError(t, await app.inject({ url: '/v1/collections', headers: bearer(old.key) }), 403, DELETED, 'collection list while no collection has the name (the key\'s record is cached)');
      assertError(t, await app.inject({ url: '/v1/usage', headers: bearer(old.key) }), 403, DELETED, 'usage while no collection has the name');
      await createTestCollection(app, admin, { name: 'pinx' });
      const uploaded = await upload('pinx', admin);
      t.equal(uploaded.statusCode, 202, uploaded.body);
      await waitForIngestion(app, 'pinx', admin);
      const documentId = uploaded.json().id as string;

      const headers = bearer(old.key);
      assertError(t, await query(headers), 403, DELETED, 'query');
      assertError(t, await upload('pinx', headers), 403, DELETED, 'upload');
      assertError(t, await app.inject({ url: `/v1/collections/pinx/documents`, headers }), 403, DELETED, 'document list');
      assertError(t, await app.inject({ url: `/v1/documents/${documentId}`, headers }), 403, DELETED, 'global document get');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/query', headers, payload: { query: 'fog', collections: ['pinx'] } }), 403, DELETED, 'multi-collection query');
      const batch = await app.inject({ method: 'POST', url: '/v1/batch/query', headers, payload: { queries: [{ collection: 'pinx', query: 'fog' }] } });
      t.match(batch.json().results, [{ collection: 'pinx', error: { status: 403, detail: DELETED } }], 'batch query item');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'pinx' } }), 403, DELETED, 'create under the name');
      assertError(t, await app.inject({ url: '/v1/collections', headers }), 403, DELETED, 'the collection list does not show the new pinx');
      assertError(t, await app.inject({ url: '/v1/usage', headers }), 403, DELETED, 'nor does the usage report (it went by name)');

      t.match(await whoami(old.key), { auth_method: 'api_key', collection: 'pinx', collection_deleted: true }, 'whoami keeps the name and says it is gone');
      t.match((await app.inject({ url: `/v1/admin/api-keys/${old.id}`, headers: admin })).json(), { collection: 'pinx', collection_deleted: true }, 'so does the admin view');

      const fresh = await createApiKey(app, cookie, { name: 'new', collection: 'pinx' });
      const own = await query(bearer(fresh.key));
      t.equal(own.statusCode, 200, own.body);
      t.ok(own.json().total > 0, 'a key pinned to the new collection finds its document');
      t.equal((await app.inject({ url: `/v1/documents/${documentId}`, headers: bearer(fresh.key) })).statusCode, 200, 'and gets it through the global route');
      t.match(await whoami(fresh.key), { collection: 'pinx', collection_deleted: false });

      const repinned = await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${old.id}`, headers: admin, payload: { collection: 'pinx' } });
      t.match(repinned.json(), { collection: 'pinx', collection_deleted: false }, 'an admin can pin the old key again');
      t.equal((await query(bearer(old.key))).statusCode, 200, 'which then reaches the new collection');
    });
  });
}
