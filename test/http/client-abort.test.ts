/**
 * A client that hangs up in the middle of an upload (a closed socket, not a cut body) is not a
 * service failure: nothing is logged as an error, nothing of the upload is kept, and the service
 * goes on. Needs a real port: inject() has no socket to close.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { logLines } from '../support/log-lines.js';
import { storedOriginals } from '../support/stored-originals.js';
import { buildTestApp, createTestCollection, multipartUpload, setupAdmin } from '../support/test-app.js';

t.test('an upload whose client hangs up mid-file: no error logged, nothing kept', async (t) => {
  const { lines, stream: logStream } = logLines();
  const ctx = await buildTestApp('pglite', {}, { logStream });
  t.teardown(() => ctx.close());
  const cookie = await setupAdmin(ctx.app);
  const collection = await createTestCollection(ctx.app, { cookie }, { name: 'aborted' });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = ctx.app.server.address() as AddressInfo;

  for (const [name, sent] of [['within the first 64 KB', 1_000], ['past the first 64 KB', 200_000]] as const) {
    const body = multipartUpload([{ filename: 'big.txt', content: 'river delta sediment '.repeat(20_000), contentType: 'text/plain' }]);
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const head = [
      'POST /v1/collections/aborted/documents HTTP/1.1', 'Host: 127.0.0.1', `Cookie: ${cookie}`,
      `Content-Type: ${body.headers['content-type']}`, `Content-Length: ${body.payload.length}`, '', '',
    ].join('\r\n');
    socket.write(head);
    socket.write(body.payload.subarray(0, sent));
    await sleep(200);
    socket.destroy();
    await sleep(300);
    t.same(lines.filter((line) => line.level >= 50).map((line) => line.err?.message ?? line.msg), [], `${name}: nothing logged as an error`);
    t.equal(lines.filter((line) => line.level === 30 && line.msg?.startsWith('the client closed the connection')).length, sent === 1_000 ? 1 : 2, `${name}: logged as information`);
  }

  const listed = await ctx.app.inject({ url: '/v1/collections/aborted/documents', headers: { cookie } });
  t.equal(listed.json().total, 0, 'no document');
  t.same(await storedOriginals(ctx.services, collection.id), [], 'no stored original');
  const small = multipartUpload([{ filename: 'ok.txt', content: 'A small note.', contentType: 'text/plain' }]);
  const after = await ctx.app.inject({ method: 'POST', url: '/v1/collections/aborted/documents', headers: { cookie, ...small.headers }, payload: small.payload });
  t.equal(after.statusCode, 202, 'the service goes on');
});
