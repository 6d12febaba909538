/**
 * An upload cut short while its file is still being opened on a slow disk leaves no partial file:
 * the file store's write waits for its file to close before it fails, so the removal that follows
 * finds the file. Without that wait the removal ran first and the open created the file afterwards
 * (5 times in 200 on these VMs with a fast disk; every time here, where opening takes 50 ms).
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { storedOriginals } from '../support/stored-originals.js';
import { adminTestApp, createTestCollection, multipartUpload } from '../support/test-app.js';

t.test('a cut upload on a slow disk: 400, no partial file left', async (t) => {
  const { app, services, admin } = await adminTestApp(t, 'pglite');
  const collection = await createTestCollection(app, admin, { name: 'slow-disk' });
  const open = fs.open;
  t.teardown(() => { fs.open = open; });
  // Only asynchronous opens are delayed: the file store's streams use them, PGlite's blocking calls do not.
  fs.open = ((...args: Parameters<typeof fs.open>) => void setTimeout(() => (open as (...rest: unknown[]) => void)(...args), 50)) as typeof fs.open;

  const body = multipartUpload([{ filename: 'tide.txt', content: 'tide pool '.repeat(10_000), contentType: 'text/plain' }]);
  const response = await app.inject({
    method: 'POST', url: '/v1/collections/slow-disk/documents', headers: { ...admin, ...body.headers }, payload: body.payload.subarray(0, 80_000),
  });
  assertError(t, response, 400, /ended before its closing boundary/, 'cut past the first 64 KB');
  await sleep(200);
  t.same(await storedOriginals(services, collection.id), [], 'no partial file');
});
