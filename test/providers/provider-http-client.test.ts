/**
 * The pieces under every provider plugin, alone: Retry-After in its three forms, provider error
 * bodies, retries exhausted or pointless, connection failures, the bound on requests in flight
 * with queries first, and batch planning within input and token limits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ConcurrencyLimit } from '../../src/concurrency/concurrency-limit.js';
import { estimateTokens, planBatches } from '../../src/embedding/embedding-batches.js';
import { providerMessage, ProviderHttpClient, retryAfterMs } from '../../src/embedding/provider-http-client.js';
import { ProviderError } from '../../src/errors.js';

const policy = { timeoutMs: 3000, maxRetries: 2, concurrency: 2 };

t.test('Retry-After: seconds, an HTTP date, retry-after-ms; unreadable is ignored', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  t.equal(retryAfterMs(new Headers({ 'retry-after': '3' }), now), 3000);
  t.equal(retryAfterMs(new Headers({ 'retry-after': '0.5' }), now), 500);
  t.equal(retryAfterMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now), 5000);
  t.equal(retryAfterMs(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now), 250, 'the precise header wins');
  t.equal(retryAfterMs(new Headers({ 'retry-after': 'soon' }), now), undefined);
  t.equal(retryAfterMs(new Headers({}), now), undefined);
});

t.test("provider messages from each provider's error shape", async (t) => {
  t.equal(providerMessage('{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}'), 'Incorrect API key', 'OpenAI');
  t.equal(providerMessage('{"message":"invalid api token"}'), 'invalid api token', 'Cohere');
  t.equal(providerMessage('{"detail":"Provided API key is invalid."}'), 'Provided API key is invalid.', 'Voyage, Jina');
  t.equal(providerMessage('{"detail":[{"msg":"field required"},{"msg":"too long"}]}'), 'field required; too long', 'validation lists');
  t.equal(providerMessage('<html>\n<head><title>502 Bad\n Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>'),
    'an HTML page: 502 Bad Gateway', 'a proxy\'s error page by its title, not its markup');
  t.equal(providerMessage('<!DOCTYPE html><html><head><style>p{}</style></head><body><p>Down for <b>maintenance</b></p></body></html>'), 'an HTML page: Down for maintenance', 'its text without a title');
  t.equal(providerMessage('{"error":"Input validation error","error_type":"Validation"}'), 'Input validation error', 'TEI');
  t.equal(providerMessage('<html>Bad Gateway</html>'), 'an HTML page: Bad Gateway', 'an HTML page: its text');
  t.equal(providerMessage('Bad Gateway'), 'Bad Gateway', 'not JSON: the text');
  t.equal(providerMessage(''), 'no message');
  t.equal(providerMessage('x'.repeat(1000)).length, 303, 'long messages are cut');
});

t.test('the client: retries, their limits, and what it refuses to retry', async (t) => {
  const answers: Array<[number, string, Record<string, string>?]> = [];
  let calls = 0;
  const server = http.createServer((request, response) => {
    calls += 1;
    request.resume();
    const [status, body, headers] = answers.shift() ?? [200, '{"ok":true}'];
    response.writeHead(status, { 'content-type': 'application/json', ...(headers ?? {}) });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
  const key = 'sk-client-test-key-12345';
  const warnings: string[] = [];
  const quieter: Array<{ level: 'info' | 'debug'; message: string; details: Record<string, unknown> }> = [];
  const client = new ProviderHttpClient({ provider: 'acme', apiKey: key, policy, logger: {
    warn: (details, message) => warnings.push(`${message} ${JSON.stringify(details)}`),
    info: (details, message) => quieter.push({ level: 'info', message, details }),
    debug: (details, message) => quieter.push({ level: 'debug', message, details }),
  } });

  answers.push([503, JSON.stringify({ message: `busy for ${key}` }), { 'retry-after-ms': '10' }]);
  t.same(await client.postJson(url, {}), { ok: true });
  t.equal(calls, 2);
  t.equal(warnings.length, 1);
  t.notMatch(warnings[0]!, key, 'the retry log line holds no key');
  t.match(warnings[0]!, '[redacted]');
  t.match(quieter, [{ level: 'info', message: 'provider answers again', details: { provider: 'acme', failed_attempts: 1 } }], 'and one line when it answers again');

  calls = 0;
  answers.push([500, '{"message":"down"}', { 'retry-after': '0' }], [502, '{"message":"down"}', { 'retry-after': '0' }], [500, '{"message":"still down"}', { 'retry-after': '0' }]);
  const exhausted = await client.postJson(url, {}).catch((error: unknown) => error);
  t.ok(exhausted instanceof ProviderError);
  t.match(exhausted, { message: 'acme answered 500: still down', retryable: true, status: 502 });
  t.equal(calls, 3, 'one attempt and two retries');
  t.equal(warnings.length, 2, 'a new run of failures: one warn line');
  t.match(quieter.slice(1), [{ level: 'debug', message: 'provider call failed again; retrying', details: { failed_attempts: 2, status: 502 } }], 'its next retried failure at debug level');

  calls = 0;
  answers.push([429, '{"message":"slow down"}', { 'retry-after': '120' }]);
  t.match(await client.postJson(url, {}).catch((error: unknown) => error), { message: 'acme answered 429: slow down', retryable: true }, 'a wait beyond a minute is left to the job queue');
  t.equal(calls, 1);

  calls = 0;
  answers.push([422, '{"detail":"texts too long"}']);
  t.match(await client.postJson(url, {}).catch((error: unknown) => error), { message: 'acme answered 422: texts too long', retryable: false });
  t.equal(calls, 1, 'a 4xx is not retried');
  t.equal(warnings.length, 2, 'the run went on: no other warn line');
  answers.push([503, '{"message":"down"}', { 'retry-after': '0' }]);
  t.same(await client.postJson(url, {}), { ok: true });
  t.equal(warnings.length, 2, 'nor for this failure');
  t.match(quieter.at(-1), { level: 'info', message: 'provider answers again', details: { failed_attempts: 5 } }, 'the answer ends the run of 5 retryable failures (3 + the 429 + this one; the 4xx was not one)');

  answers.push([200, 'not json']);
  t.match(await client.postJson(url, {}).catch((error: unknown) => error), { message: 'acme answered with a body that is not JSON', retryable: false });

  const closedPort = await new Promise<number>((resolve) => {
    const probe = http.createServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const unreachable = new ProviderHttpClient({ provider: 'acme', policy: { ...policy, maxRetries: 1 } });
  t.match(await unreachable.postJson(`http://127.0.0.1:${closedPort}/x`, {}).catch((error: unknown) => error), { message: /^acme could not be reached: ECONNREFUSED/, retryable: true });
});

t.test('the concurrency limit: never more than the limit, interactive work first', async (t) => {
  const limit = new ConcurrencyLimit(2);
  const order: string[] = [];
  let peak = 0;
  const task = (name: string) => async () => {
    peak = Math.max(peak, limit.inFlight);
    await new Promise((resolve) => setTimeout(resolve, 10));
    order.push(name);
  };
  await Promise.all([
    limit.run(task('b1')), limit.run(task('b2')), limit.run(task('b3')), limit.run(task('b4')),
    limit.run(task('query'), 'interactive'),
  ]);
  t.equal(peak, 2);
  t.ok(order.indexOf('query') < order.indexOf('b3'), `the query ran before queued background work: ${order.join(' ')}`);
  t.throws(() => new ConcurrencyLimit(0), RangeError);
});

t.test('batch planning: input limits, token budgets, spreading over parallel requests', async (t) => {
  const texts = (count: number, length = 40) => Array.from({ length: count }, (_, index) => `${index}`.padEnd(length, 'x'));
  const sizes = (ranges: Array<[number, number]>) => ranges.map(([start, end]) => end - start);
  t.same(sizes(planBatches(texts(250), { maxInputs: 96 }, 1)), [96, 96, 58], 'one at a time: full requests');
  t.same(sizes(planBatches(texts(250), { maxInputs: 96 }, 8)), [32, 32, 32, 32, 32, 32, 32, 26], 'spread over 8 requests');
  t.same(sizes(planBatches(texts(20), { maxInputs: 96 }, 8)), [8, 8, 4], 'not below 8 texts a request');
  t.same(sizes(planBatches(texts(10, 4000), { maxInputs: 96, maxTokens: 4000 }, 1)), [3, 3, 3, 1], 'a token budget (with its margin) cuts requests');
  t.same(sizes(planBatches(texts(1, 40_000), { maxInputs: 96, maxTokens: 4000 }, 1)), [1], 'a text over the budget still goes, alone');
  t.same(planBatches([], { maxInputs: 96 }, 8), []);
  t.equal(estimateTokens('abcdefgh'), 2);
});
