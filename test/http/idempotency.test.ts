import t from 'tap';
import { API_KEY_DISPLAY_PREFIX_LENGTH } from '../../src/auth/api-keys.service.js';
import { sha256Hex } from '../../src/crypto/tokens.js';
import { failNextCalls } from '../support/failing-calls.js';
import {
  adminTestApp, createTestCollection, multipartUpload, testBackends,
} from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, cookie } = ctx;

    const listKeys = async (sessionCookie = cookie) => {
      const response = await app.inject({ method: 'GET', url: '/v1/admin/api-keys', headers: { cookie: sessionCookie } });
      t.equal(response.statusCode, 200);
      return response.json() as { data: Array<{ id: string; name: string }>; total: number };
    };
    const auditCount = async (action: string) => {
      const response = await app.inject({ method: 'GET', url: `/v1/admin/audit?action=${action}`, headers: { cookie } });
      t.equal(response.statusCode, 200);
      return (response.json() as { total: number }).total;
    };
    const createKey = (key: string, payload: object, sessionCookie = cookie) => app.inject({
      method: 'POST', url: '/v1/admin/api-keys', headers: { cookie: sessionCookie, 'idempotency-key': key }, payload,
    });

    await t.test('a repeated request is replayed, not executed twice', async (t) => {
      const first = await createKey('key-create-1', { name: 'ci', scopes: ['query:read'] });
      t.equal(first.statusCode, 201);
      t.equal(first.headers['idempotent-replayed'], undefined, 'the first response is not marked as a replay');
      const created = first.json() as { id: string; key: string; name: string };
      t.match(created.key, /^svc_sk_/);

      const second = await createKey('key-create-1', { name: 'ci', scopes: ['query:read'] });
      t.equal(second.statusCode, 201);
      t.equal(second.headers['idempotent-replayed'], 'true');
      t.match(second.headers['content-type'], /^application\/json/);
      const { key: _plaintext, ...withoutKey } = created;
      t.strictSame(second.json(), { ...withoutKey, key: null, key_shown_once: true }, 'the same key record; the plaintext was shown once');

      const third = await createKey('key-create-1', { name: 'ci', scopes: ['query:read'] });
      t.equal(third.statusCode, 201);
      t.equal(third.headers['idempotent-replayed'], 'true');
      t.equal(third.json().id, created.id);

      const keys = await listKeys();
      t.equal(keys.total, 1, 'only one key exists');
      t.strictSame(keys.data.map((key) => key.id), [created.id]);
      t.equal(await auditCount('api_key.create'), 1, 'the work was audited once');

      // A different key is a new request.
      const fresh = await createKey('key-create-2', { name: 'ci', scopes: ['query:read'] });
      t.equal(fresh.statusCode, 201);
      t.equal(fresh.headers['idempotent-replayed'], undefined);
      t.not(fresh.json().id, created.id);
      t.equal((await listKeys()).total, 2);

      // Without the header nothing is remembered.
      const plainA = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name: 'plain' } });
      const plainB = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name: 'plain' } });
      t.equal(plainA.statusCode, 201);
      t.equal(plainB.statusCode, 201);
      t.not(plainA.json().id, plainB.json().id);
      t.equal((await listKeys()).total, 4);
    });

    await t.test('the same key with a different request is 422', async (t) => {
      const before = (await listKeys()).total;
      const response = await createKey('key-create-1', { name: 'something else' });
      t.equal(response.statusCode, 422);
      t.type(response.json().detail, 'string');
      t.equal(response.headers['idempotent-replayed'], undefined);

      // The same key on another path is a different request too, and does nothing.
      const usersBefore = (await app.inject({ method: 'GET', url: '/v1/admin/users', headers: { cookie } })).json().total;
      const otherPath = await app.inject({
        method: 'POST', url: '/v1/admin/users', headers: { cookie, 'idempotency-key': 'key-create-1' },
        payload: { email: 'reused-key@example.com', password: 'long-enough-password' },
      });
      t.equal(otherPath.statusCode, 422);
      t.type(otherPath.json().detail, 'string');
      t.equal((await listKeys()).total, before, 'no key was created');
      const usersAfter = (await app.inject({ method: 'GET', url: '/v1/admin/users', headers: { cookie } })).json().total;
      t.equal(usersAfter, usersBefore, 'no user was created');

      // The original is still replayable afterwards.
      const replay = await createKey('key-create-1', { name: 'ci', scopes: ['query:read'] });
      t.equal(replay.statusCode, 201);
      t.equal(replay.headers['idempotent-replayed'], 'true');
    });

    await t.test('errors are replayed too', async (t) => {
      const usersBefore = await app.inject({ method: 'GET', url: '/v1/admin/users', headers: { cookie } });
      const payload = { email: 'short@example.com', password: 'short' };
      const first = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie, 'idempotency-key': 'user-short' }, payload });
      t.equal(first.statusCode, 400);
      t.type(first.json().detail, 'string');
      t.equal(first.headers['idempotent-replayed'], undefined);
      const second = await app.inject({ method: 'POST', url: '/v1/admin/users', headers: { cookie, 'idempotency-key': 'user-short' }, payload });
      t.equal(second.statusCode, 400);
      t.equal(second.headers['idempotent-replayed'], 'true');
      t.strictSame(second.json(), first.json());

      // A 404 from a mutating request is remembered as well.
      const missing = '00000000-0000-4000-8000-000000000000';
      const rotateA = await app.inject({ method: 'POST', url: `/v1/admin/api-keys/${missing}/rotate`, headers: { cookie, 'idempotency-key': 'rotate-missing' } });
      const rotateB = await app.inject({ method: 'POST', url: `/v1/admin/api-keys/${missing}/rotate`, headers: { cookie, 'idempotency-key': 'rotate-missing' } });
      t.equal(rotateA.statusCode, 404);
      t.equal(rotateB.statusCode, 404);
      t.equal(rotateB.headers['idempotent-replayed'], 'true');
      t.strictSame(rotateB.json(), rotateA.json());

      const usersAfter = await app.inject({ method: 'GET', url: '/v1/admin/users', headers: { cookie } });
      t.equal(usersAfter.json().total, usersBefore.json().total, 'no user was created');
    });

    await t.test('a replayed rotate rotates once', async (t) => {
      const { id } = (await createKey('rotate-setup', { name: 'to rotate' })).json() as { id: string };
      const first = await app.inject({ method: 'POST', url: `/v1/admin/api-keys/${id}/rotate`, headers: { cookie, 'idempotency-key': 'rotate-1' } });
      t.equal(first.statusCode, 200);
      const second = await app.inject({ method: 'POST', url: `/v1/admin/api-keys/${id}/rotate`, headers: { cookie, 'idempotency-key': 'rotate-1' } });
      t.equal(second.statusCode, 200);
      t.equal(second.headers['idempotent-replayed'], 'true');
      t.equal(second.json().prefix, first.json().prefix, 'the same rotation is described');
      const whoami = await app.inject({ method: 'GET', url: '/v1/auth/whoami', headers: { authorization: `Bearer ${first.json().key}` } });
      t.equal(whoami.statusCode, 200, 'the key of the first rotation still works: there was no second rotation');
      t.equal(await auditCount('api_key.rotate'), 1);
    });

    await t.test('a plaintext key is shown once: a replay withholds it and no record holds it', async (t) => {
      const storedRecords = async () => JSON.stringify(await ctx.services.sql('select * from idempotency_records'));
      const whoami = (key: string) => app.inject({ method: 'GET', url: '/v1/auth/whoami', headers: { authorization: `Bearer ${key}` } });

      const first = await createKey('shown-once', { name: 'shown once', scopes: ['query:read'] });
      t.equal(first.statusCode, 201);
      const created = first.json() as { id: string; key: string; prefix: string };
      t.match(created.key, /^svc_sk_/, 'the first answer has the plaintext');
      t.equal((await whoami(created.key)).statusCode, 200, 'the key of the first answer works');
      const replay = await createKey('shown-once', { name: 'shown once', scopes: ['query:read'] });
      t.equal(replay.statusCode, 201);
      t.equal(replay.headers['idempotent-replayed'], 'true');
      t.match(replay.json(), { id: created.id, prefix: created.prefix, name: 'shown once', key: null, key_shown_once: true }, 'the key it names, without the plaintext');
      t.notOk(replay.body.includes(created.key), 'no plaintext in the replay');

      const rotateOnce = () => app.inject({ method: 'POST', url: `/v1/admin/api-keys/${created.id}/rotate`, headers: { cookie, 'idempotency-key': 'rotated-once' } });
      const rotated = await rotateOnce();
      t.equal(rotated.statusCode, 200);
      const rotatedKey = (rotated.json() as { key: string }).key;
      t.match(rotatedKey, /^svc_sk_/, 'the first answer of a rotation has the new plaintext');
      const rotateReplay = await rotateOnce();
      t.equal(rotateReplay.statusCode, 200);
      t.equal(rotateReplay.headers['idempotent-replayed'], 'true');
      t.match(rotateReplay.json(), { id: created.id, key: null, key_shown_once: true });
      t.notOk(rotateReplay.body.includes(rotatedKey), 'no plaintext in the replayed rotation');
      t.equal((await whoami(rotatedKey)).statusCode, 200, 'the rotated key works: the replay did not rotate again');
      t.equal((await whoami(created.key)).statusCode, 401, 'the key before the rotation does not');

      const records = await storedRecords();
      t.ok(records.includes('key_shown_once'), 'the answers were stored');
      t.notOk(records.includes(created.key), 'no record holds the created plaintext');
      t.notOk(records.includes(rotatedKey), 'no record holds the rotated plaintext');
      t.notOk(records.includes(created.key.slice(API_KEY_DISPLAY_PREFIX_LENGTH)), 'nor its secret part');
      t.notOk(records.includes(rotatedKey.slice(API_KEY_DISPLAY_PREFIX_LENGTH)), 'nor the rotated secret part');
    });

    await t.test('a retried upload is replayed although its client drew a new multipart boundary', async (t) => {
      await createTestCollection(app, { cookie }, { name: 'retried' });
      const upload = (key: string, content: string) => {
        // A new boundary each time, as HTTP clients draw one per request (same length, as theirs).
        const body = multipartUpload([{ filename: 'retry.txt', content, contentType: 'text/plain' }]);
        return app.inject({ method: 'POST', url: '/v1/collections/retried/documents', headers: { cookie, 'idempotency-key': key, ...body.headers }, payload: body.payload });
      };
      const first = await upload('upload-1', 'A file sent twice.');
      t.equal(first.statusCode, 202);
      const again = await upload('upload-1', 'A file sent twice.');
      t.equal(again.statusCode, 202);
      t.equal(again.headers['idempotent-replayed'], 'true', 'replayed');
      t.equal(again.json().id, first.json().id, 'the same document');
      t.equal((await app.inject({ url: '/v1/collections/retried/documents', headers: { cookie } })).json().total, 1, 'one document');
      const other = await upload('upload-1', 'Another file, longer than the first.');
      t.equal(other.statusCode, 422, 'a body of another length with the same key is still another request');
      const sameLength = await upload('upload-1', 'A file sent twice!');
      t.equal(sameLength.statusCode, 422, 'another file of the same length with the same key is another request');
      t.match(sameLength.json().detail, /different request/);
      t.equal((await app.inject({ url: '/v1/collections/retried/documents', headers: { cookie } })).json().total, 1, 'still one document');
    });

    await t.test('an upload is compared with the first by its fields too, and a batch by every file', async (t) => {
      await createTestCollection(app, { cookie }, { name: 'retried-parts' });
      const post = (url: string, key: string, files: Array<{ filename: string; content: string; contentType?: string }>, fields: Record<string, string> = {}) => {
        const body = multipartUpload(files.map((file) => ({ contentType: 'text/plain', ...file })), fields);
        return app.inject({ method: 'POST', url, headers: { cookie, 'idempotency-key': key, ...body.headers }, payload: body.payload });
      };
      const documents = '/v1/collections/retried-parts/documents';
      const first = await post(documents, 'with-metadata', [{ filename: 'a.txt', content: 'Alpha text.' }], { metadata: '{"team":"red"}' });
      t.equal(first.statusCode, 202);
      const replay = await post(documents, 'with-metadata', [{ filename: 'a.txt', content: 'Alpha text.' }], { metadata: '{"team":"red"}' });
      t.equal(replay.headers['idempotent-replayed'], 'true');
      const otherMetadata = await post(documents, 'with-metadata', [{ filename: 'a.txt', content: 'Alpha text.' }], { metadata: '{"team":"tan"}' });
      t.equal(otherMetadata.statusCode, 422, 'other metadata of the same length');
      const otherName = await post(documents, 'with-metadata', [{ filename: 'b.txt', content: 'Alpha text.' }], { metadata: '{"team":"red"}' });
      t.equal(otherName.statusCode, 422, 'another filename of the same length');

      const batch = '/v1/collections/retried-parts/documents/batch';
      // The refused file is read to its end as well (the batch goes on past it), so it is compared too.
      const files = [{ filename: 'one.txt', content: 'First of two.' }, { filename: 'two.txt', content: 'Second of two.' }, { filename: 'tool.exe', content: 'MZ\u0000\u0001 refused', contentType: 'application/octet-stream' }];
      const batchFirst = await post(batch, 'batch-1', files);
      t.equal(batchFirst.statusCode, 202, batchFirst.body);
      t.equal(batchFirst.json().documents[2].status, 'rejected');
      const batchReplay = await post(batch, 'batch-1', files);
      t.equal(batchReplay.headers['idempotent-replayed'], 'true');
      t.strictSame(batchReplay.json(), batchFirst.json());
      const batchOther = await post(batch, 'batch-1', [files[0]!, { filename: 'two.txt', content: 'Second of TWO.' }]);
      t.equal(batchOther.statusCode, 422, 'the second file differs at the same length');
      const otherRefused = await post(batch, 'batch-1', [files[0]!, files[1]!, { filename: 'tool.exe', content: 'MZ\u0000\u0001 REFUSED', contentType: 'application/octet-stream' }]);
      t.equal(otherRefused.statusCode, 422, 'the refused file differs at the same length');
      t.equal((await app.inject({ url: documents, headers: { cookie } })).json().total, 3, 'one document from the upload and two from the batch');
    });

    await t.test('an upload refused before its body was read is not kept: its key can carry the corrected upload', async (t) => {
      await createTestCollection(app, { cookie }, { name: 'retried-refused' });
      const upload = (filename: string, content: string) => {
        const body = multipartUpload([{ filename, content, contentType: 'application/octet-stream' }]);
        return app.inject({ method: 'POST', url: '/v1/collections/retried-refused/documents', headers: { cookie, 'idempotency-key': 'refused-1', ...body.headers }, payload: body.payload });
      };
      const refused = await upload('tool.exe', 'MZ\u0000\u0001 not a document at all');
      t.equal(refused.statusCode, 415, refused.body);
      const again = await upload('tool.exe', 'MZ\u0000\u0001 not a document at all');
      t.equal(again.statusCode, 415);
      t.equal(again.headers['idempotent-replayed'], undefined, 'run again, not replayed');
      const corrected = await upload('notes.txt', 'Plain notes that can be read.');
      t.equal(corrected.statusCode, 202, corrected.body);
      t.equal((await app.inject({ url: '/v1/collections/retried-refused/documents', headers: { cookie } })).json().total, 1);

      // An unknown collection is answered before the body is read: the key can carry the upload once it exists.
      const toLater = () => {
        const body = multipartUpload([{ filename: 'later.txt', content: 'Written before its collection.', contentType: 'text/plain' }]);
        return app.inject({ method: 'POST', url: '/v1/collections/made-later/documents', headers: { cookie, 'idempotency-key': 'refused-2', ...body.headers }, payload: body.payload });
      };
      t.equal((await toLater()).statusCode, 404);
      await createTestCollection(app, { cookie }, { name: 'made-later' });
      const landed = await toLater();
      t.equal(landed.statusCode, 202, landed.body);
      t.equal(landed.headers['idempotent-replayed'], undefined, 'run, not the 404 replayed');
    });

    await t.test('keys are scoped per caller', async (t) => {
      const created = await app.inject({
        method: 'POST', url: '/v1/admin/users', headers: { cookie },
        payload: { email: 'second-admin@example.com', password: 'second-admin-password' },
      });
      t.equal(created.statusCode, 201);
      const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'second-admin@example.com', password: 'second-admin-password' } });
      t.equal(login.statusCode, 200);
      const session = login.cookies.find((c) => c.name === 'svc_session')!;
      const otherCookie = `${session.name}=${session.value}`;

      const before = (await listKeys()).total;
      const original = await createKey('key-create-1', { name: 'ci', scopes: ['query:read'] });
      const mine = await createKey('key-create-1', { name: 'ci', scopes: ['query:read'] }, otherCookie);
      t.equal(mine.statusCode, 201);
      t.equal(mine.headers['idempotent-replayed'], undefined, 'not a replay of the first admin\'s request');
      t.not(mine.json().id, original.json().id);
      t.not(mine.json().key, original.json().key);

      // A different body under the other admin's key is not a 422 against the first admin's record.
      const differentBody = await createKey('key-create-2', { name: 'another' }, otherCookie);
      t.equal(differentBody.statusCode, 201);
      t.equal(differentBody.headers['idempotent-replayed'], undefined);

      const again = await createKey('key-create-1', { name: 'ci', scopes: ['query:read'] }, otherCookie);
      t.equal(again.headers['idempotent-replayed'], 'true');
      t.equal(again.json().id, mine.json().id);
      t.equal((await listKeys()).total, before + 2);
    });

    await t.test('concurrent repeats execute once', async (t) => {
      const before = (await listKeys()).total;
      const responses = await Promise.all([1, 2, 3].map(() => createKey('concurrent', { name: 'concurrent' })));
      const statuses = responses.map((response) => response.statusCode).sort();
      t.ok(statuses.every((status) => status === 201 || status === 409), `statuses ${statuses.join(',')}`);
      const successes = responses.filter((response) => response.statusCode === 201);
      t.ok(successes.length >= 1);
      t.equal(new Set(successes.map((response) => response.json().id)).size, 1, 'every 201 carries the same key');
      for (const conflict of responses.filter((response) => response.statusCode === 409)) t.type(conflict.json().detail, 'string');
      t.equal((await listKeys()).total, before + 1);
    });

    await t.test('under MASTER_KEY a stored request digest is keyed, so a copy of the table cannot test password guesses', async (t) => {
      const keyed = await adminTestApp(t, backend, { masterKey: 'idempotency-master-key' });
      const body = { email: 'digest@example.com', password: 'correct horse battery staple', role: 'viewer' };
      const createUser = (password: string) => keyed.app.inject({
        method: 'POST', url: '/v1/admin/users', headers: { cookie: keyed.cookie, 'idempotency-key': 'user-1' }, payload: { ...body, password },
      });
      t.equal((await createUser(body.password)).statusCode, 201);
      const [record] = await keyed.services.sql<{ request_hash: string }>('select request_hash from idempotency_records');
      t.match(record?.request_hash, /^[0-9a-f]{64}$/);
      t.not(record?.request_hash, sha256Hex(`POST\n/v1/admin/users\n${JSON.stringify(body)}`), 'not the plain SHA-256 of the request');
      const replay = await createUser(body.password);
      t.equal(replay.headers['idempotent-replayed'], 'true', 'the same request is still recognised');
      t.equal((await createUser('another password')).statusCode, 422, 'and a different one still refused');
    });

    await t.test('a server error is not kept: a retry with the same key runs again', async (t) => {
      await createTestCollection(app, { cookie }, { name: 'after-500' });
      failNextCalls(t, ctx.services.indexes.vectorStore, 'upsert');
      const send = () => app.inject({
        method: 'POST', url: '/v1/collections/after-500/vectors/upsert', headers: { cookie, 'idempotency-key': 'upsert-after-500' },
        payload: { vectors: [{ id: 'only', text: 'a lighthouse at dusk', embedding: Array.from({ length: 384 }, (_, index) => (index === 3 ? 1 : 0)) }] },
      });
      const failed = await send();
      t.equal(failed.statusCode, 500, failed.body);
      const retried = await send();
      t.equal(retried.statusCode, 200, retried.body);
      t.same(retried.json(), { upserted: 1 });
      t.equal(retried.headers['idempotent-replayed'], undefined, 'run, not replayed');
      const repeated = await send();
      t.equal(repeated.headers['idempotent-replayed'], 'true', 'the success is what is kept');
      t.equal((await app.inject({ url: '/v1/collections/after-500/stats', headers: { cookie } })).json().vectors, 1, 'one vector stored');
    });

    await t.test('a key is free again once its record is 24 hours old', async (t) => {
      t.equal((await createKey('key-a-day-old', { name: 'first of the day' })).statusCode, 201);
      t.equal((await createKey('key-a-day-old', { name: 'the next day' })).statusCode, 422, 'within the day, another request is refused');
      await ctx.services.sql("update idempotency_records set created_at = created_at - interval '24 hours 1 minute' where key = ?", ['key-a-day-old']);
      const nextDay = await createKey('key-a-day-old', { name: 'the next day' });
      t.equal(nextDay.statusCode, 201, nextDay.body);
      t.equal(nextDay.headers['idempotent-replayed'], undefined, 'run, not replayed');
      t.equal((await listKeys()).data.filter((key) => key.name === 'the next day').length, 1, 'created');
    });

    await t.test('the key must be 1-255 characters', async (t) => {
      const before = (await listKeys()).total;
      const long = await createKey('k'.repeat(256), { name: 'long' });
      t.equal(long.statusCode, 400);
      t.type(long.json().detail, 'string');
      const empty = await createKey('', { name: 'empty' });
      t.equal(empty.statusCode, 400);
      t.type(empty.json().detail, 'string');
      t.equal((await listKeys()).total, before, 'nothing was created');

      const longest = await createKey('k'.repeat(255), { name: 'longest' });
      t.equal(longest.statusCode, 201);
      t.equal((await listKeys()).total, before + 1);

      // Reads ignore the header.
      const read = await app.inject({ method: 'GET', url: '/v1/admin/api-keys', headers: { cookie, 'idempotency-key': 'k'.repeat(300) } });
      t.equal(read.statusCode, 200);
    });
  });
}
