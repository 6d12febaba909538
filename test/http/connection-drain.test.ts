import { PassThrough } from 'node:stream';
import t from 'tap';
import { logLines } from '../support/log-lines.js';
import { buildTestApp } from '../support/test-app.js';

t.test('a request in flight when the app closes is answered, and closing logs no error', async (t) => {
  const { lines, stream: logStream } = logLines();
  const { app, close } = await buildTestApp('pglite', {}, { logStream });
  t.teardown(close);

  const body = JSON.stringify({ email: 'admin@example.com', password: 'a long passphrase' });
  const stream = new PassThrough();
  const answered = app.inject({ method: 'POST', url: '/v1/auth/setup', headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, payload: stream });
  stream.write(body.slice(0, 10));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const closed = app.close();
  stream.end(body.slice(10));
  const response = await answered;
  await closed;
  t.equal(response.statusCode, 201, response.body);
  t.same(lines.filter((line) => line.level >= 50).map((line) => line.err?.message ?? line.msg), [], 'nothing logged as an error');
});
