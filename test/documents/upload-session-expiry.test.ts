/**
 * UPLOAD_SESSION_EXPIRY_HOURS (upload-session-expiry.ts): an open upload session given no file for
 * that long is cancelled, as expired, and its stored files are removed; its client's next request
 * is a 409 saying so. Sessions given files since, completing ones and the expiry's 0 are left alone.
 * A start expires at once the sessions that went idle while the service was down.
 */
import { existsSync, readdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { assertError } from '../support/assertions.js';
import { startStreamedRequest } from '../support/streamed-request.js';
import { waitUntil } from '../support/wait-until.js';
import { buildTestApp, multipartUpload, restartableTestApp, setupAdmin, testBackends, type TestApp } from '../support/test-app.js';

const HOUR_MS = 3_600_000;

/** The requests on the upload sessions of collection "drafts", which `app` has, as `admin`. */
function sessionRequests(app: TestApp['app'], services: TestApp['services'], admin: Record<string, string>) {
  const base = '/v1/collections/drafts/uploads';
  return {
    createCollection: () => app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'drafts' } }),
    open: async () => (await app.inject({ method: 'POST', url: base, headers: admin })).json() as { id: string; expires_at: string | null; updated_at: string },
    put: (id: string, filename: string) => {
      const body = multipartUpload([{ filename, content: `${filename} holds a short note about harbours and their tides.`, contentType: 'text/plain' }]);
      return app.inject({ method: 'PUT', url: `${base}/${id}/files`, headers: { ...admin, ...body.headers }, payload: body.payload });
    },
    get: async (id: string) => (await app.inject({ url: `${base}/${id}`, headers: admin })).json(),
    complete: (id: string) => app.inject({ method: 'POST', url: `${base}/${id}/complete`, headers: admin }),
    cancel: (id: string) => app.inject({ method: 'DELETE', url: `${base}/${id}`, headers: admin }),
    /** Makes the session's last activity `hours` ago. */
    age: (id: string, hours: number) => services.sql(`update upload_sessions set updated_at = now() - ? * interval '1 hour' where id = ?`, [hours, id]),
  };
}

async function sessionsApp(t: Test, backend: 'pglite' | 'postgresql', uploadSessionExpiryMs: number) {
  const ctx = await buildTestApp(backend, { uploadSessionExpiryMs });
  t.teardown(() => ctx.close());
  const admin = { cookie: await setupAdmin(ctx.app) };
  const requests = sessionRequests(ctx.app, ctx.services, admin);
  const collectionId = (await requests.createCollection()).json().id as string;
  return {
    ...requests,
    ctx,
    cookie: admin.cookie,
    storedFiles: () => {
      const dir = path.join(ctx.services.config.dataDir, 'files', collectionId);
      return existsSync(dir) ? readdirSync(dir).length : 0;
    },
  };
}

for (const backend of testBackends()) {
  t.test(`${backend}: idle open sessions expire and lose their files`, async (t) => {
    const api = await sessionsApp(t, backend, 24 * HOUR_MS);
    const idle = await api.open();
    t.equal(Date.parse(idle.expires_at!) - Date.parse(idle.updated_at), 24 * HOUR_MS, 'an open session says when it expires: 24 hours after its last activity');
    t.equal((await api.put(idle.id, 'idle.txt')).statusCode, 200);
    const busy = await api.open();
    t.equal((await api.put(busy.id, 'busy.txt')).statusCode, 200);
    const completing = await api.open();
    t.equal((await api.put(completing.id, 'done.txt')).statusCode, 200);
    t.equal((await api.complete(completing.id)).statusCode, 202);
    const cancelled = await api.open();
    t.equal((await api.cancel(cancelled.id)).statusCode, 204);
    const filesBefore = api.storedFiles();

    await api.age(idle.id, 25);
    await api.age(busy.id, 23);
    await api.age(completing.id, 25);
    t.equal(await api.ctx.services.uploadSessionExpiry.expireIdle(), 1, 'one session was open and idle longer than 24 hours');
    t.match(await api.get(idle.id), { status: 'cancelled', expired: true, expires_at: null, file_count: 0, files: [] });
    t.equal(api.storedFiles(), filesBefore - 1, 'its stored file is removed');
    assertError(t, await api.put(idle.id, 'late.txt'), 409, /is cancelled \(it expired: no file was added to it for longer than UPLOAD_SESSION_EXPIRY_HOURS, and its files were removed\)/, 'files after it expired');
    assertError(t, await api.complete(idle.id), 409, /expired/, 'completing it');
    t.equal(api.storedFiles(), filesBefore - 1, 'the late file is not kept');

    t.match(await api.get(busy.id), { status: 'open', expired: false, file_count: 1 }, 'a session active within 24 hours stays open');
    t.not((await api.get(completing.id)).status, 'cancelled', 'a completing session is not expired');
    t.match(await api.get(cancelled.id), { status: 'cancelled', expired: false }, 'a session its client cancelled is not "expired"');
    assertError(t, await api.put(cancelled.id, 'x.txt'), 409, /^Upload session \S+ is cancelled: only an open session can take files$/);

    await api.age(busy.id, 30);
    t.equal((await api.put(busy.id, 'again.txt')).statusCode, 200, 'a file resets the clock');
    t.equal(await api.ctx.services.uploadSessionExpiry.expireIdle(), 0);
    t.match(await api.get(busy.id), { status: 'open', file_count: 2 });
  });

  t.test(`${backend}: a start expires the sessions that went idle while the service was down, without waiting a round`, async (t) => {
    const lives = await restartableTestApp(t, backend, 'rs-expiry-start-');
    const expiry = { uploadSessionExpiryMs: 24 * HOUR_MS };
    const first = await lives.restart(expiry);
    const admin = { cookie: await setupAdmin(first.app) };
    const before = sessionRequests(first.app, first.services, admin);
    t.equal((await before.createCollection()).statusCode, 201);
    const session = await before.open();
    t.equal((await before.put(session.id, 'left.txt')).statusCode, 200);
    // Its last file came 25 hours ago, then the service stopped (its next round was 10 minutes away).
    await before.age(session.id, 25);

    const second = await lives.restart(expiry);
    const status = async () => await sessionRequests(second.app, second.services, admin).get(session.id) as { status: string; expired: boolean };
    // The next round is 10 minutes away: only the one at start can expire it within the wait.
    await waitUntil(async () => (await status()).status === 'cancelled', 'the session expired');
    t.match(await status(), { status: 'cancelled', expired: true });
  });

  t.test(`${backend}: UPLOAD_SESSION_EXPIRY_HOURS 0: sessions never expire`, async (t) => {
    const api = await sessionsApp(t, backend, 0);
    const session = await api.open();
    t.equal(session.expires_at, null);
    await api.age(session.id, 24 * 365);
    t.equal(await api.ctx.services.uploadSessionExpiry.expireIdle(), 0);
    t.match(await api.get(session.id), { status: 'open', expired: false });
  });
}

t.test('a session whose upload is streaming when it would expire stays open and takes the file', async (t) => {
  const api = await sessionsApp(t, 'pglite', 24 * HOUR_MS);
  const session = await api.open();
  await api.age(session.id, 23.99);
  await api.ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = api.ctx.app.server.address() as AddressInfo;
  const body = multipartUpload([{ filename: 'slow.txt', content: 'tide gauge readings '.repeat(5_000), contentType: 'text/plain' }]);
  const upload = await startStreamedRequest(port, {
    method: 'PUT', url: `/v1/collections/drafts/uploads/${session.id}/files`, headers: { Cookie: api.cookie, 'Content-Type': body.headers['content-type'] },
  }, body.payload, 1_000);
  t.teardown(() => upload.destroy());
  // The request has reached the route (its first bytes are stored) when the expiry runs an hour later.
  await waitUntil(async () => Date.parse((await api.get(session.id)).updated_at) >= Date.now() - HOUR_MS, 'the upload reaches the route');
  t.equal(await api.ctx.services.uploadSessionExpiry.expireIdle(new Date(Date.now() + 0.5 * HOUR_MS)), 0, 'the upload under way counts as activity');
  t.match(await upload.finish(), /^HTTP\/1\.1 200 /, 'the file is taken');
  t.match(await api.get(session.id), { status: 'open', expired: false, file_count: 1 });
});
