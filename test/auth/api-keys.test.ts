import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import {
  adminTestApp, bearer, createApiKey, createTestCollection, testBackends,
} from '../support/test-app.js';
import { assertError } from '../support/assertions.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, cookie, admin } = ctx;
    const whoami = (key: string) => app.inject({ url: '/v1/auth/whoami', headers: bearer(key) });
    const getKey = (id: string) => app.inject({ url: `/v1/admin/api-keys/${id}`, headers: { cookie } });

    t.test('create returns the plaintext once; only a hash is stored', async (t) => {
      const created = await createApiKey(app, cookie, { name: 'ingest bot' });
      t.match(created.key, /^svc_sk_[A-Za-z0-9_-]{40,}$/);
      t.equal(created.prefix, created.key.slice(0, 12));
      t.equal(created.prefix.length, 12);
      t.same(created.scopes, ['*:*'], 'omitted scopes are stored as *:*');
      t.match(created, { name: 'ingest bot', active: true, expires_at: null, last_used_at: null, collection: null });

      const empty = await createApiKey(app, cookie, { name: 'empty scopes', scopes: [] });
      t.same(empty.scopes, ['*:*'], 'empty scopes are stored as *:*');

      const fetched = (await getKey(created.id)).json();
      t.notOk('key' in fetched, 'the plaintext is never shown again');
      const listed = (await app.inject({ url: '/v1/admin/api-keys', headers: { cookie } })).json();
      t.equal(listed.total, 2);
      t.notOk(JSON.stringify(listed).includes(created.key));

      const rows = await ctx.services.db.fork().getConnection().execute<Array<{ key_hash: string }>>('select key_hash from api_keys where id = ?', [created.id]);
      t.equal(rows[0]?.key_hash, createHash('sha256').update(created.key).digest('hex'));
      t.notOk(JSON.stringify(await ctx.services.db.fork().getConnection().execute('select * from api_keys')).includes(created.key));
    });

    t.test('whoami shows scopes and pin; last_used_at updates', async (t) => {
      await createTestCollection(app, admin, { name: 'handbook' });
      const key = await createApiKey(app, cookie, { name: 'reader', scopes: ['collection:read', 'query:read'], collection: 'handbook' });
      const before = Date.now();
      const response = await whoami(key.key);
      t.equal(response.statusCode, 200);
      t.match(response.json(), { auth_method: 'api_key', api_key: { id: key.id, name: 'reader', prefix: key.prefix }, scopes: ['collection:read', 'query:read'], collection: 'handbook' });
      const used = (await getKey(key.id)).json();
      t.ok(used.last_used_at, 'last_used_at is set after use');
      t.ok(Date.parse(used.last_used_at) >= before - 1000, 'and it is recent');
      await sleep(20);
      await whoami(key.key);
      const usedAgain = (await getKey(key.id)).json();
      t.ok(Date.parse(usedAgain.last_used_at) > Date.parse(used.last_used_at), 'each use moves it forward');
    });

    t.test('uses of several keys written together each land on their own key', async (t) => {
      const keys = [];
      for (const name of ['first app', 'second app', 'third app']) keys.push(await createApiKey(app, cookie, { name }));
      const unused = await createApiKey(app, cookie, { name: 'unused app' });
      const usedBetween: Array<[number, number]> = [];
      for (const key of keys) {
        await sleep(5);
        const before = Date.now();
        t.equal((await whoami(key.key)).statusCode, 200);
        usedBetween.push([before, Date.now()]);
      }
      // The listing flushes the uses not written yet (the timer may have written some already).
      const listed = (await app.inject({ url: '/v1/admin/api-keys?limit=100', headers: { cookie } })).json() as { data: Array<{ id: string; last_used_at: string | null }> };
      const lastUse = new Map(listed.data.map((item) => [item.id, item.last_used_at]));
      const stamps = keys.map((key) => Date.parse(lastUse.get(key.id)!));
      t.ok(stamps.every((stamp, index) => stamp >= usedBetween[index]![0] && stamp <= usedBetween[index]![1]), `each key has the time of its own use: ${JSON.stringify({ stamps, usedBetween })}`);
      t.equal(lastUse.get(unused.id), null, 'a key that was not used stays unused');
    });

    t.test('expired, inactive, rotated-away and deleted keys are 401', async (t) => {
      const pastCreate = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name: 'dead', expires_at: new Date(Date.now() - 1000).toISOString() } });
      assertError(t, pastCreate, 400, /^expires_at is in the past/, 'a key created already expired');
      const expired = await createApiKey(app, cookie, { name: 'expired' });
      const expire = await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${expired.id}`, headers: { cookie }, payload: { expires_at: new Date(Date.now() - 1000).toISOString() } });
      t.equal(expire.statusCode, 200, 'an update may expire a key now');
      t.equal((await whoami(expired.key)).statusCode, 401, 'already expired');

      const expiring = await createApiKey(app, cookie, { name: 'expiring', expires_at: new Date(Date.now() + 1500).toISOString() });
      t.equal((await whoami(expiring.key)).statusCode, 200, 'valid before expires_at');
      await sleep(1600);
      t.equal((await whoami(expiring.key)).statusCode, 401, 'refused after expires_at, even when cached');

      const toggled = await createApiKey(app, cookie, { name: 'toggled' });
      t.equal((await whoami(toggled.key)).statusCode, 200);
      const off = await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${toggled.id}`, headers: { cookie }, payload: { active: false } });
      t.equal(off.statusCode, 200);
      t.equal(off.json().active, false);
      t.equal((await whoami(toggled.key)).statusCode, 401, 'inactive at once, although it was cached');
      await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${toggled.id}`, headers: { cookie }, payload: { active: true } });
      t.equal((await whoami(toggled.key)).statusCode, 200, 'reactivated');

      const rotated = await createApiKey(app, cookie, { name: 'rotated', scopes: ['query:read'] });
      t.equal((await whoami(rotated.key)).statusCode, 200);
      const rotation = await app.inject({ method: 'POST', url: `/v1/admin/api-keys/${rotated.id}/rotate`, headers: { cookie } });
      t.equal(rotation.statusCode, 200);
      const renewed = rotation.json();
      t.not(renewed.key, rotated.key);
      t.equal(renewed.id, rotated.id, 'same key record');
      t.same(renewed.scopes, ['query:read'], 'scopes survive rotation');
      t.equal(renewed.prefix, renewed.key.slice(0, 12));
      t.equal((await whoami(rotated.key)).statusCode, 401, 'the rotated-away key stops working');
      t.equal((await whoami(renewed.key)).statusCode, 200, 'the new key works');

      const deleted = await createApiKey(app, cookie, { name: 'deleted' });
      t.equal((await whoami(deleted.key)).statusCode, 200);
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/admin/api-keys/${deleted.id}`, headers: { cookie } })).statusCode, 204);
      t.equal((await whoami(deleted.key)).statusCode, 401);
      t.equal((await getKey(deleted.id)).statusCode, 404);

      t.equal((await app.inject({ url: '/v1/auth/whoami', headers: { authorization: 'Basic abc' } })).statusCode, 401, 'a non-bearer scheme');
      const live = await createApiKey(app, cookie, { name: 'live' });
      t.equal((await app.inject({ url: '/v1/auth/whoami', headers: { authorization: `Bearer ${live.key} trailing` } })).statusCode, 401, 'a header with more than the key');
      t.equal((await app.inject({ url: '/v1/auth/whoami', headers: { authorization: `bearer  ${live.key}` } })).statusCode, 200, 'any case, extra blanks');
      t.equal((await whoami('not-a-service-key')).statusCode, 401, 'a token without the svc_sk_ prefix');
    });

    t.test('update and validation', async (t) => {
      await createTestCollection(app, admin, { name: 'manuals' });
      const key = await createApiKey(app, cookie, { name: 'editable' });
      const patched = await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${key.id}`, headers: { cookie }, payload: { name: 'renamed', scopes: ['document:read'], collection: 'manuals', expires_at: '2099-01-01T00:00:00Z' } });
      t.equal(patched.statusCode, 200);
      t.match(patched.json(), { name: 'renamed', scopes: ['document:read'], collection: 'manuals', expires_at: '2099-01-01T00:00:00.000Z' });
      const cleared = await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${key.id}`, headers: { cookie }, payload: { collection: null, expires_at: null } });
      t.match(cleared.json(), { collection: null, expires_at: null });

      for (const payload of [{ name: '' }, { name: 'x', scopes: ['read'] }, { name: 'x', scopes: ['collection:read:extra'] }, { name: 'x', collection: 'bad name!' }, { name: 'x', expires_at: 'tomorrow' }, { name: 'x', active: true }]) {
        const response = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload });
        t.equal(response.statusCode, 400, JSON.stringify(payload));
        t.type(response.json().detail, 'string');
      }
      // A scope that names no resource or action of the service grants nothing: a typo, refused.
      const keysBefore = (await app.inject({ url: '/v1/admin/api-keys', headers: { cookie } })).json().total;
      for (const scope of ['collection:fly', 'collection:rea', 'document:uplod', 'nothing:none', 'webhooks:*', '*:fly']) {
        const response = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name: 'typo', scopes: ['query:read', scope] } });
        assertError(t, response, 400, new RegExp(`^Unknown scope "${scope.replace('*', '\\*')}": it grants nothing; known scopes are collection:read, `), `scope ${scope}`);
      }
      // "*" is the spec's wildcard; alone it was "must NOT have fewer than 3 characters".
      for (const [scope, detail] of [['*', /^Invalid scope "\*": expected resource:action \("\*:\*" grants every scope\)$/], ['', /^Invalid scope "": expected resource:action$/]] as const) {
        assertError(t, await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name: 'short', scopes: [scope] } }), 400, detail, `scope ${JSON.stringify(scope)}`);
      }
      t.equal((await app.inject({ url: '/v1/admin/api-keys', headers: { cookie } })).json().total, keysBefore, 'no key was created');
      const typoed = await app.inject({ method: 'PATCH', url: `/v1/admin/api-keys/${key.id}`, headers: { cookie }, payload: { scopes: ['document:uplod'] } });
      assertError(t, typoed, 400, /^Unknown scope "document:uplod"/, 'PATCH with an unknown scope');
      t.same((await app.inject({ url: `/v1/admin/api-keys/${key.id}`, headers: { cookie } })).json().scopes, ['document:read'], 'its scopes are unchanged');
      for (const scopes of [['*:read'], ['vector:*'], ['*:*'], ['chat:write', 'audit:read']]) {
        t.equal((await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name: 'wild', scopes } })).statusCode, 201, `scopes ${scopes.join(' ')}`);
      }
      t.equal((await app.inject({ url: '/v1/admin/api-keys', headers: { cookie } })).json().total, (await app.inject({ url: '/v1/admin/api-keys?limit=500', headers: { cookie } })).json().data.length, 'no half-written keys');
      t.equal((await app.inject({ method: 'PATCH', url: '/v1/admin/api-keys/00000000-0000-4000-8000-000000000000', headers: { cookie }, payload: { name: 'x' } })).statusCode, 404);
    });

    t.test('a key cannot mint keys', async (t) => {
      const key = await createApiKey(app, cookie, { name: 'full' });
      const response = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: bearer(key.key), payload: { name: 'escalate' } });
      t.equal(response.statusCode, 403);
    });
  });
}
