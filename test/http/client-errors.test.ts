/**
 * Requests Node's HTTP parser refuses before the app sees them get the service's error shape,
 * `{detail, code}`, like every other error (api-contract 1). Needs a real port: inject() skips the
 * parser.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp } from '../support/test-app.js';

t.test('refused by the HTTP parser: 400 or 431 with {detail, code}', async (t) => {
  const ctx = await buildTestApp('pglite');
  t.teardown(() => ctx.close());
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = ctx.app.server.address() as AddressInfo;
  const exchange = async (request: string, halfClose: boolean) => {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.on('error', () => undefined);
    socket.write(request);
    if (halfClose) socket.end();
    await closed;
    const text = Buffer.concat(chunks).toString('utf8');
    const [head, body] = text.split('\r\n\r\n');
    return { status: Number(head!.split(' ')[1]), head: head!, body: JSON.parse(body!) as { detail: string; code: string } };
  };

  const cut = await exchange('POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"email":', true);
  t.equal(cut.status, 400, 'a body cut off by a half-closed connection');
  t.match(cut.body, { detail: /^The request is not valid HTTP or ended before its body did/, code: 'bad_request' });
  t.match(cut.head, /content-type: application\/json/i);

  const garbage = await exchange('NOT HTTP AT ALL\r\n\r\n', false);
  t.equal(garbage.status, 400, 'a request line that is not HTTP');
  t.match(garbage.body, { detail: /not valid HTTP/, code: 'bad_request' });

  const huge = await exchange(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, false);
  t.equal(huge.status, 431, 'headers over the limit');
  t.same(huge.body, { detail: 'The request headers are too large', code: 'headers_too_large' });

  const healthy = await fetch(`http://127.0.0.1:${port}/health`);
  t.equal(healthy.status, 200, 'the service goes on');
});
