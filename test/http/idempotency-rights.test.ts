import t, { type Test } from 'tap';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';
import { type Answer, assertError } from '../support/assertions.js';
import {
  adminTestApp, bearer, createApiKey, createTestCollection, sessionCookieOf, testBackends,
} from '../support/test-app.js';

/** What a replay to a caller whose rights changed since the first request answers. */
const RIGHTS_CHANGED = /Idempotency-Key was first used while .* other rights.*new Idempotency-Key/;
const CHUNK_TEXT = 'nebula archive of collection b';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, cookie, admin } = ctx;

    await createTestCollection(app, admin, { name: 'colA', dimension: 4 });
    await createTestCollection(app, admin, { name: 'colB', dimension: 4 });
    const seeded = await app.inject({
      method: 'POST', url: '/v1/collections/colB/vectors/upsert', headers: admin,
      payload: { vectors: [{ id: 'b-secret', embedding: Array.from(hashedTextVector(CHUNK_TEXT, 4)), text: CHUNK_TEXT }] },
    });
    t.equal(seeded.statusCode, 200, 'colB holds a chunk');

    const post = (url: string, headers: Record<string, string>, payload: object, key?: string) => app.inject({
      method: 'POST', url, headers: key === undefined ? headers : { ...headers, 'idempotency-key': key }, payload,
    });
    const queryB = (headers: Record<string, string>, key?: string) =>
      post('/v1/collections/colB/query', headers, { query: 'nebula archive', search_mode: 'keyword', skip_cache: true }, key);
    const multiQueryB = (headers: Record<string, string>, key?: string) =>
      post('/v1/query', headers, { query: 'nebula archive', collections: ['colB'], search_mode: 'keyword', skip_cache: true }, key);
    const upsertB = (headers: Record<string, string>, key?: string, id = 'from-key') =>
      post('/v1/collections/colB/vectors/upsert', headers, { vectors: [{ id, embedding: [1, 0, 0, 0], text: `written as ${id}` }] }, key);
    const updateKey = async (t: Test, id: string, payload: object) => {
      const response = await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${id}`, headers: { cookie }, payload });
      t.equal(response.statusCode, 200, `key updated: ${response.body.slice(0, 200)}`);
    };
    const assertReplayed = (t: Test, response: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, what: string) => {
      t.equal(response.statusCode, status, `${what}: ${response.body.slice(0, 200)}`);
      t.equal(response.headers['idempotent-replayed'], 'true', `${what} is a replay`);
    };
    const assertRefusedReplay = (t: Test, response: Answer & { headers: Record<string, unknown> }, what: string) => {
      assertError(t, response, 409, RIGHTS_CHANGED, what);
      t.equal(response.headers['idempotent-replayed'], undefined, `${what} is not a replay`);
      t.notMatch(response.body, CHUNK_TEXT, `${what} carries no chunk of colB`);
    };

    await t.test('a key pinned after its request gets 409, not the stored answer, on every route', async (t) => {
      const key = await createApiKey(app, cookie, { name: 'unpinned', scopes: ['query:read', 'vector:write'] });
      const headers = bearer(key.key);

      const first = await queryB(headers, 'pin-q');
      t.equal(first.statusCode, 200, 'the first request is answered');
      t.match(first.body, CHUNK_TEXT, 'the first answer holds colB\'s chunk');
      const firstMulti = await multiQueryB(headers, 'pin-multi');
      t.equal(firstMulti.statusCode, 200, 'the first multi-collection query is answered');
      t.match(firstMulti.body, CHUNK_TEXT, 'with colB\'s chunk');
      const firstUpsert = await upsertB(headers, 'pin-upsert');
      t.equal(firstUpsert.statusCode, 200, 'the first upsert is answered');
      assertReplayed(t, await queryB(headers, 'pin-q'), 200, 'a repeat with unchanged rights');

      await updateKey(t, key.id, { collection: 'colA' });
      assertError(t, await queryB(headers), 403, 'API key is pinned to collection colA', 'the query without the header');
      assertError(t, await multiQueryB(headers), 403, 'API key is pinned to collection colA', 'the multi-collection query without the header');
      assertError(t, await upsertB(headers), 403, 'API key is pinned to collection colA', 'the upsert without the header');
      assertRefusedReplay(t, await queryB(headers, 'pin-q'), 'the query with the header');
      assertRefusedReplay(t, await multiQueryB(headers, 'pin-multi'), 'the multi-collection query with the header');
      assertRefusedReplay(t, await upsertB(headers, 'pin-upsert'), 'the upsert with the header');

      // The rights the record was stored under, restored: the stored answer is the caller's again.
      await updateKey(t, key.id, { collection: null });
      assertReplayed(t, await queryB(headers, 'pin-q'), 200, 'a repeat once the pin is lifted');
    });

    // Not replaying is not enough: running the request again would here do what was refused, and
    // would run twice a request the first rights allowed.
    await t.test('widened rights do not run a stored request again', async (t) => {
      const key = await createApiKey(app, cookie, { name: 'pinned to a', scopes: ['query:read', 'vector:write'], collection: 'colA' });
      const headers = bearer(key.key);
      const refused = await upsertB(headers, 'widen-upsert', 'widened');
      assertError(t, refused, 403, 'API key is pinned to collection colA', 'the first upsert');

      await updateKey(t, key.id, { collection: null });
      assertRefusedReplay(t, await upsertB(headers, 'widen-upsert', 'widened'), 'the upsert with the header, now unpinned');
      const [row] = await ctx.services.sql<{ count: string | number }>("select count(*) as count from chunks where text = 'written as widened'");
      t.equal(Number(row!.count), 0, 'the upsert was not run under the wider rights');
    });

    await t.test('a key whose scopes changed gets 409; the same scopes in another order still replay', async (t) => {
      const key = await createApiKey(app, cookie, { name: 'scoped', scopes: ['query:read', 'collection:read'] });
      const headers = bearer(key.key);
      const first = await queryB(headers, 'scope-q');
      t.equal(first.statusCode, 200, 'the first request is answered');

      await updateKey(t, key.id, { scopes: ['query:read'] });
      t.equal((await queryB(headers)).statusCode, 200, 'the query itself is still allowed');
      assertRefusedReplay(t, await queryB(headers, 'scope-q'), 'the query with the header after a scope change');

      await updateKey(t, key.id, { scopes: ['collection:read', 'query:read'] });
      assertReplayed(t, await queryB(headers, 'scope-q'), 200, 'a repeat with the first scopes back');
    });

    await t.test('a user whose role changed gets 409', async (t) => {
      const created = await app.inject({
        method: 'POST', url: '/v1/admin/users', headers: { cookie },
        payload: { email: 'demoted@example.com', password: 'demoted-password', role: 'admin' },
      });
      t.equal(created.statusCode, 201, 'a second admin');
      const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'demoted@example.com', password: 'demoted-password' } });
      t.equal(login.statusCode, 200);
      const headers = { cookie: sessionCookieOf(login) };

      const first = await queryB(headers, 'role-q');
      t.equal(first.statusCode, 200, 'the first request is answered');
      assertReplayed(t, await queryB(headers, 'role-q'), 200, 'a repeat with the same role');

      const demoted = await app.inject({ method: 'PATCH', url: `/v1/admin/users/${created.json().id}`, headers: { cookie }, payload: { role: 'viewer' } });
      t.equal(demoted.statusCode, 200, 'demoted to viewer');
      t.equal((await queryB(headers)).statusCode, 200, 'a viewer may still query');
      assertRefusedReplay(t, await queryB(headers, 'role-q'), 'the query with the header after the demotion');
    });

    await t.test('a record stored before rights were recorded is replayed', async (t) => {
      const key = await createApiKey(app, cookie, { name: 'older record', scopes: ['query:read'] });
      const headers = bearer(key.key);
      t.equal((await queryB(headers, 'old-q')).statusCode, 200);
      await ctx.services.sql("update idempotency_records set rights_hash = null where key = 'old-q'");
      await updateKey(t, key.id, { scopes: ['query:read', 'collection:read'] });
      assertReplayed(t, await queryB(headers, 'old-q'), 200, 'a record without rights');
    });
  });
}
