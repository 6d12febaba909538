/**
 * Many HTTP clients send `Content-Type: application/json` on every request. An empty body with that
 * header is no body: bodyless DELETEs and POSTs succeed, a route that needs a body answers 400 saying
 * so, and non-empty JSON is parsed as before (malformed 400, prototype poisoning 400, body limit 413).
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { adminTestApp, createApiKey, createTestCollection, multipartUpload, testBackends } from '../support/test-app.js';

const BODY_LIMIT = 64 * 1024;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend, { bodyLimitBytes: BODY_LIMIT });
    await createTestCollection(app, admin, { name: 'emptied' });

    for (const contentType of ['application/json', 'application/json; charset=utf-8']) {
      await t.test(`bodyless routes sent "${contentType}" and no body succeed`, async (t) => {
        const json = { ...admin, 'content-type': contentType };
        const call = (method: 'POST' | 'PUT' | 'DELETE', url: string) => app.inject({ method, url, headers: json });
        const expect = async (method: 'POST' | 'PUT' | 'DELETE', url: string, status: number) => {
          const response = await call(method, url);
          t.equal(response.statusCode, status, `${method} ${url}: ${response.body.slice(0, 200)}`);
          return response;
        };
        const upload = (url: string, method: 'POST' | 'PUT', name: string) => {
          const body = multipartUpload([{ filename: name, content: `Notes about ${name}.`, contentType: 'text/plain' }]);
          return app.inject({ method, url, headers: { ...admin, ...body.headers }, payload: body.payload });
        };

        const document = await upload('/v1/collections/emptied/documents', 'POST', 'single.txt');
        t.equal(document.statusCode, 202, document.body.slice(0, 200));
        await expect('DELETE', `/v1/collections/emptied/documents/${document.json().id}`, 204);

        // Opening an upload session takes an optional body: an empty one is none.
        const session = (await expect('POST', '/v1/collections/emptied/uploads', 201)).json();
        t.equal((await upload(`/v1/collections/emptied/uploads/${session.id}/files`, 'PUT', 'session.txt')).statusCode, 200);
        const completed = (await expect('POST', `/v1/collections/emptied/uploads/${session.id}/complete`, 202)).json();
        await expect('DELETE', `/v1/collections/emptied/batches/${completed.batch_id}`, 204);
        const cancelled = (await expect('POST', '/v1/collections/emptied/uploads', 201)).json();
        await expect('DELETE', `/v1/collections/emptied/uploads/${cancelled.id}`, 204);

        t.equal((await upload('/v1/collections/emptied/documents', 'POST', 'truncated.txt')).statusCode, 202);
        t.same((await expect('POST', '/v1/collections/emptied/truncate', 200)).json(), { deleted_documents: 1 });

        const key = await createApiKey(app, admin.cookie);
        t.ok((await expect('POST', `/v1/admin/api-keys/${key.id}/rotate`, 200)).json().key, 'rotated');
        await expect('DELETE', `/v1/admin/api-keys/${key.id}`, 204);

        await createTestCollection(app, admin, { name: 'dropped' });
        await expect('DELETE', '/v1/collections/dropped', 204);
        t.equal((await app.inject({ url: '/v1/collections/dropped', headers: admin })).statusCode, 404, 'the collection is gone');
      });
    }

    await t.test('a route that needs a body still answers 400 saying it has none', async (t) => {
      for (const headers of [{ ...admin, 'content-type': 'application/json' }, admin]) {
        const what = headers === admin ? 'no content type' : 'JSON content type';
        assertError(t, await app.inject({ method: 'POST', url: '/v1/collections', headers }), 400, 'POST /v1/collections needs a JSON body and the request has none', `create a collection, ${what}`);
        assertError(t, await app.inject({ method: 'POST', url: '/v1/admin/users', headers }), 400, /needs a JSON body/, `create a user, ${what}`);
        assertError(t, await app.inject({ method: 'PATCH', url: '/v1/collections/emptied', headers }), 400, /PATCH \/v1\/collections\/emptied needs a JSON body/, `update a collection, ${what}`);
      }
      // A body that is present but wrong still names what is wrong.
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: {} }), 400, /missing required field "name"/, 'an empty object');
      t.equal((await app.inject({ url: '/v1/collections', headers: admin })).json().total, 1, 'no collection was created');
    });

    await t.test('non-empty JSON is parsed as before', async (t) => {
      const json = { ...admin, 'content-type': 'application/json' };
      const send = (payload: string) => app.inject({ method: 'POST', url: '/v1/collections', headers: json, payload });
      for (const payload of ['{"name":', ' ', 'null x']) {
        const response = await send(payload);
        assertError(t, response, 400, /Body is not valid JSON/i, `malformed ${JSON.stringify(payload)}`);
        t.equal(response.json().code, 'FST_ERR_CTP_INVALID_JSON_BODY');
      }
      // Refused by secure-json-parse itself: a plain JSON.parse would leave it to the schema.
      for (const payload of ['{"name":"poisoned","__proto__":{"admin":true}}', '{"name":"poisoned","constructor":{"prototype":{"admin":true}}}']) {
        const response = await send(payload);
        assertError(t, response, 400, /holds a "__proto__" key, or "constructor" with "prototype" in it/, `prototype poisoning ${payload}: refused as such, not as broken JSON`);
      }
      assertError(t, await send(JSON.stringify({ name: 'large', description: 'x'.repeat(BODY_LIMIT) })), 413, undefined, 'over BODY_LIMIT_BYTES');
      // An empty object on a route that takes no body is no body: some clients send `{}` with every request.
      const created = await send('{"name":"parsed"}');
      t.equal(created.statusCode, 201, created.body.slice(0, 200));
      t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/parsed', headers: json, payload: '{}' })).statusCode, 204);
      t.equal((await app.inject({ url: '/v1/collections', headers: admin })).json().total, 1, 'only the collection of the test remains');
    });

    await t.test('a route that takes no body refuses one with fields, and does nothing', async (t) => {
      const json = { ...admin, 'content-type': 'application/json' };
      const upload = multipartUpload([{ filename: 'kept.txt', content: 'Notes that must survive.', contentType: 'text/plain' }]);
      t.equal((await app.inject({ method: 'POST', url: '/v1/collections/emptied/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload })).statusCode, 202);
      // It was ignored: {"confirm": false} on truncate still deleted every document.
      for (const payload of ['{"confirm":false}', '{"dry_run":true,"x":1}', '[1]', '"yes"']) {
        const response = await app.inject({ method: 'POST', url: '/v1/collections/emptied/truncate', headers: json, payload });
        assertError(t, response, 400, /^POST \/v1\/collections\/emptied\/truncate takes no body/, `truncate with ${payload}`);
      }
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/emptied/truncate', headers: json, payload: '{"confirm":false,"x":1}' }), 400, 'POST /v1/collections/emptied/truncate takes no body; it has "confirm", "x"', 'the fields are named');
      t.equal((await app.inject({ url: '/v1/collections/emptied/documents', headers: admin })).json().total, 1, 'nothing was truncated');
      const key = await createApiKey(app, admin.cookie);
      assertError(t, await app.inject({ method: 'POST', url: `/v1/admin/api-keys/${key.id}/rotate`, headers: json, payload: '{"keep_old":true}' }), 400, /takes no body; it has "keep_old"$/, 'rotate');
      t.equal((await app.inject({ url: '/v1/auth/whoami', headers: { authorization: `Bearer ${key.key}` } })).statusCode, 200, 'the key was not rotated');
      t.same((await app.inject({ method: 'POST', url: '/v1/collections/emptied/truncate', headers: json, payload: '{}' })).json(), { deleted_documents: 1 }, 'an empty object is no body');
    });

    await t.test('logout sent a JSON content type and no body', async (t) => {
      const response = await app.inject({ method: 'POST', url: '/v1/auth/logout', headers: { ...admin, 'content-type': 'application/json' } });
      t.equal(response.statusCode, 204, response.body);
      t.equal((await app.inject({ url: '/v1/auth/me', headers: admin })).statusCode, 401, 'the session ended');
    });
  });
}
