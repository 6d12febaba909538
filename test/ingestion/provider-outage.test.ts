/**
 * An embedding provider that is down (5xx, unreachable) or rate-limiting for longer than its
 * client's retries last. Such a failure used to count as one of the job's 3 attempts, retried 2 s
 * and 4 s later: a provider away for half a minute failed every document being ingested and every
 * one queued behind them, and a 429 asking for two minutes (Retry-After: 120) failed its documents
 * 6 s later. Now the documents wait for the provider, `pending` and saying so, without using up
 * attempts, for up to PROVIDER_OUTAGE_WAIT_S; failures a retry cannot mend still fail at once
 * (test/providers/embedding-providers).
 *
 * The provider's client does not retry here (providerMaxRetries 0), so each claim is one request.
 */
import t from 'tap';
import { startProviderFake } from '../support/provider-fakes.js';
import { logLines } from '../support/log-lines.js';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion, type Backend, type TestAppOptions } from '../support/test-app.js';
import { providerApi } from '../providers/provider-api.js';

const KEY = 'sk-test-OUTAGE-KEY-0123456789abcdef';
const OVERLOADED = { status: 503, body: { error: { message: 'The engine is currently overloaded' } } };

async function outageApp(t: { teardown(fn: () => Promise<void>): void }, backend: Backend, providerOutageWaitMs: number, options: TestAppOptions = {}, overrides: Record<string, number> = {}) {
  const fake = await startProviderFake({ apiKey: KEY });
  t.teardown(() => fake.close());
  const ctx = await buildTestApp(backend, { masterKey: 'test-master-key', providerMaxRetries: 0, providerTimeoutMs: 3000, providerOutageWaitMs, ...overrides }, options);
  t.teardown(() => ctx.close());
  const cookie = await setupAdmin(ctx.app);
  const api = providerApi(ctx.app, { cookie });
  await api.createCollection({ name: 'docs', embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 64, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('openai') });
  const document = (id: string) => api.ok('GET', `/v1/collections/docs/documents/${id}`);
  const until = async (id: string, done: (document: any) => boolean, timeoutMs = 30_000) => {
    for (const deadline = Date.now() + timeoutMs; ;) {
      const current = await document(id);
      if (done(current)) return current;
      if (Date.now() > deadline) throw new Error(`document ${id} never got there: ${JSON.stringify(current)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const attemptsOf = async (id: string) => Number((await ctx.services.sql<{ attempts: number }>('select attempts from jobs where document_id = ?', [id]))[0]!.attempts);
  return { fake, api, ctx, cookie, document, until, attemptsOf };
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    await t.test('a provider down past the job\'s attempts: the documents wait for it, pending, and are ingested once it answers', async (t) => {
      const { fake, api, until, attemptsOf } = await outageApp(t, backend, 20_000);
      // Four failed requests: before, the third failed the document for good.
      fake.failNext('openai', OVERLOADED, 4);
      const { id } = await api.upload('docs', 'tides.txt', 'The harbour lighthouse keeps the tide tables for the bay.');
      const waiting = await until(id, (current) => /waiting for the provider/.test(current.progress?.message ?? '') || current.status === 'failed');
      t.equal(waiting.status, 'pending', `waits for the provider: ${waiting.error ?? ''}`);
      t.equal(waiting.progress.stage, 'embedding', 'at the stage that needs it');
      t.match(waiting.progress.message, /^embedding failed: openai answered 503: The engine is currently overloaded \(waiting for the provider since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, at most 20 s\)$/);
      t.ok(Date.parse(waiting.progress.next_attempt_at) > Date.now() - 1000, `says when it is tried next (${waiting.progress.next_attempt_at})`);
      t.equal(waiting.error, null);
      const stats = await api.stats('docs');
      t.equal(stats.documents_by_status.pending, 1);
      t.match(stats.waiting_for_provider, { documents: 1, error: 'embedding failed: openai answered 503: The engine is currently overloaded' }, 'the collection\'s stats say how many wait for the provider, and why');
      t.ok(Date.parse(stats.waiting_for_provider.since) <= Date.now(), `and since when (${stats.waiting_for_provider.since})`);

      const ready = await until(id, (current) => current.status !== 'pending' && current.status !== 'processing');
      t.equal(ready.status, 'ready', ready.error ?? '');
      t.equal(fake.requestsTo('openai').length, 5, 'four failures, then the answer');
      t.equal(await attemptsOf(id), 1, 'the waits used up no attempt');
      t.same((await api.stats('docs')).waiting_for_provider, { documents: 0, since: null, error: null }, 'none waits once it is ingested');
      t.equal((await api.query('docs', { query: 'lighthouse tide tables', search_mode: 'semantic' })).results[0]?.document_id, id, 'and it is found');
    });

    await t.test('a 429 asking for two minutes: the document is tried again then, not 2 s later', async (t) => {
      const { fake, api, until, attemptsOf } = await outageApp(t, backend, 600_000);
      fake.failNext('openai', { status: 429, headers: { 'retry-after': '120' }, body: { error: { message: 'Rate limit reached for requests', type: 'requests' } } });
      const uploadedAt = Date.now();
      const { id } = await api.upload('docs', 'quota.txt', 'Quota notes for the orchard survey.');
      const waiting = await until(id, (current) => current.progress?.next_attempt_at !== undefined || current.status === 'failed');
      t.equal(waiting.status, 'pending');
      t.match(waiting.progress.message, /^embedding failed: openai answered 429: Rate limit reached for requests \(waiting for the provider since .*, at most 10 min\)$/);
      const nextAttempt = Date.parse(waiting.progress.next_attempt_at);
      t.ok(nextAttempt >= uploadedAt + 115_000 && nextAttempt <= Date.now() + 125_000, `tried again when the provider said: ${waiting.progress.next_attempt_at}`);
      await new Promise((resolve) => setTimeout(resolve, 3000));
      t.equal(fake.requestsTo('openai').length, 1, 'not asked again meanwhile');
      t.equal((await until(id, () => true)).status, 'pending');
      t.equal(await attemptsOf(id), 0, 'no attempt used up while it waits');
    });

    await t.test('documents waiting for their provider are tried at once on reprocess, and when the collection\'s key changes', async (t) => {
      // A wait of 10 minutes: the first pause is 15 s, which each step below must not need.
      const { fake, api, until, document } = await outageApp(t, backend, 600_000);
      const waitFor = async (filename: string, text: string) => {
        const { id } = await api.upload('docs', filename, text);
        const waiting = await until(id, (current) => current.progress?.next_attempt_at !== undefined || current.status === 'ready' || current.status === 'failed');
        t.equal(waiting.status, 'pending', `${filename} waits`);
        return { id, nextAttempt: Date.parse(waiting.progress.next_attempt_at) };
      };

      fake.failNext('openai', OVERLOADED);
      const first = await waitFor('first.txt', 'Notes on the first lighthouse.');
      const reprocessed = await api.ok('POST', `/v1/collections/docs/documents/${first.id}/reprocess`, undefined, 202);
      t.equal(reprocessed.status, 'pending');
      t.ok(Date.parse(reprocessed.progress.next_attempt_at) <= Date.now(), 'its next attempt is now');
      t.equal((await until(first.id, (current) => current.status === 'ready')).status, 'ready');
      t.ok(Date.now() < first.nextAttempt, 'ingested before the attempt it waited for');
      t.equal((await api.send('POST', `/v1/collections/docs/documents/${first.id}/reprocess`)).statusCode, 202, 'a ready document is reprocessed as before');
      await until(first.id, (current) => current.status === 'ready');

      fake.failNext('openai', OVERLOADED);
      const second = await waitFor('second.txt', 'Notes on the second lighthouse.');
      t.equal((await api.send('PATCH', '/v1/collections/docs', { embedding_api_key: KEY })).statusCode, 200);
      t.equal((await until(second.id, (current) => current.status === 'ready')).status, 'ready', 'a new key: tried at once');
      t.ok(Date.now() < second.nextAttempt, 'before the attempt it waited for');

      fake.failNext('openai', OVERLOADED);
      const third = await waitFor('third.txt', 'Notes on the third lighthouse.');
      const collection = await api.ok('POST', '/v1/collections/docs/reprocess', undefined, 202);
      t.same(collection, { queued: 2, skipped: 0, retried_now: 1 }, 'the ready ones are queued again, the waiting one tried now');
      const documents = await api.settle('docs');
      t.same(documents.map((current) => current.status), ['ready', 'ready', 'ready']);
      t.ok(Date.now() < third.nextAttempt, 'before the attempt it waited for');
      t.equal((await document(third.id)).progress.next_attempt_at, undefined, 'a document ingested says nothing of a next attempt');
    });

    await t.test('a batch waiting for its provider is one warn line, not one per document', async (t) => {
      const { lines, stream: logStream } = logLines();
      const { fake, ctx, cookie, until } = await outageApp(t, backend, 600_000, { logStream });
      fake.failNext('openai', OVERLOADED);
      const files = ['one', 'two', 'three'].map((name) => ({ filename: `${name}.txt`, content: `The ${name} harbour note.`, contentType: 'text/plain' }));
      const upload = multipartUpload(files);
      const answer = await ctx.app.inject({ method: 'POST', url: '/v1/collections/docs/documents/batch', headers: { cookie, ...upload.headers }, payload: upload.payload });
      t.equal(answer.statusCode, 202, answer.body);
      for (const { id } of answer.json().documents) await until(id, (current) => current.progress?.next_attempt_at !== undefined);
      // The line is written after the documents say they wait (once the rest of the collection is
      // postponed): read the log once it is there. The next claim comes after the first pause, 15 s.
      const isWaitLine = (line: { msg?: string }) => line.msg === 'ingestion jobs wait for their provider, which is unavailable';
      for (const deadline = Date.now() + 10_000; !lines.some(isWaitLine) && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 20));
      const waits = lines.filter(isWaitLine);
      t.equal(waits.length, 1, 'one line');
      t.match(waits[0], { level: 40, jobs: 3, error: 'embedding failed: openai answered 503: The engine is currently overloaded' });
    });

    await t.test('a provider failing request after request is one warn line of its client, naming the collection, and one line when it answers again', async (t) => {
      const { lines, stream: logStream } = logLines();
      const { fake, ctx, cookie } = await outageApp(t, backend, 600_000, { logStream }, { providerMaxRetries: 3, providerConcurrency: 1 });
      // One request at a time, tried 4 times: it fails 4 times, the documents wait for the provider,
      // then the next claim's request fails twice more before the provider answers.
      fake.failNext('openai', { ...OVERLOADED, headers: { 'retry-after-ms': '5' } }, 6);
      const files = Array.from({ length: 3 }, (_, index) => ({ filename: `log-${index}.txt`, content: `Harbour log ${index} about the tides and the ferry.`, contentType: 'text/plain' }));
      const upload = multipartUpload(files);
      const answer = await ctx.app.inject({ method: 'POST', url: '/v1/collections/docs/documents/batch', headers: { cookie, ...upload.headers }, payload: upload.payload });
      t.equal(answer.statusCode, 202, answer.body);
      const documents = await waitForIngestion(ctx.app, 'docs', { cookie });
      t.same(documents.map((document) => document.status), files.map(() => 'ready'), 'every document is ingested');
      t.equal(fake.requestsTo('openai').length, 7, 'six failed attempts, then the answer');
      const failures = lines.filter((line) => /^provider call failed/.test(line.msg ?? ''));
      const warned = failures.filter((line) => line.level === 40);
      t.equal(warned.length, 1, `one warn line for the run of failures (${failures.length} lines in all)`);
      t.match(warned[0], { component: 'providers', provider: 'openai', collection: 'docs', status: 503, reason: 'answered 503: The engine is currently overloaded' });
      t.equal(failures.filter((line) => line.level === 20).length, 4, 'the other retried failures at debug level (the 4th was not retried: the documents waited for the provider)');
      const recovered = lines.filter((line) => line.msg === 'provider answers again');
      t.equal(recovered.length, 1, 'one line when it answers again');
      t.match(recovered[0], { level: 30, component: 'providers', provider: 'openai', collection: 'docs', failed_attempts: 6 });
      t.ok((recovered[0] as { failing_for_ms?: number }).failing_for_ms! >= 0, 'saying for how long it failed');
    });

    await t.test('once a claim finds the provider unavailable, the collection\'s other queued documents wait with it instead of each finding it again', async (t) => {
      // One worker claims 64 jobs at a time: the first claim finds the provider down, the other 5 due jobs are still queued.
      // One request in flight: a claim's 64 chunks go in one request.
      // The workers start once all 70 are queued: started before, a claim could take the first files of the upload alone.
      // A wait of a minute: the first pause, 3 s, leaves time to read every document before they are tried again.
      const { fake, ctx, cookie } = await outageApp(t, backend, 60_000, { startWorkers: false }, { workerConcurrency: 1, providerConcurrency: 1 });
      fake.failNext('openai', OVERLOADED);
      const files = Array.from({ length: 70 }, (_, index) => ({ filename: `note-${index}.txt`, content: `Harbour note ${index} about the tides.`, contentType: 'text/plain' }));
      const upload = multipartUpload(files);
      const answer = await ctx.app.inject({ method: 'POST', url: '/v1/collections/docs/documents/batch', headers: { cookie, ...upload.headers }, payload: upload.payload });
      t.equal(answer.statusCode, 202, answer.body);
      const ids: string[] = answer.json().documents.map((document: { id: string }) => document.id);
      // One more waits for a retry after a failure of its own (a file store that was away): it may not need the provider.
      const ownRetry = ids.pop()!;
      const [{ run_after: ownRetryAt }] = await ctx.services.sql<{ run_after: Date }>(
        "update jobs set attempts = 1, last_error = 'parsing failed: could not read the original: the file store is unavailable', run_after = now() + interval '2 seconds' where document_id = ? returning run_after",
        [ownRetry],
      );
      await ctx.services.start();
      let waiting: any[] = [];
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
        waiting = (await ctx.app.inject({ url: '/v1/collections/docs/documents?limit=100', headers: { cookie } })).json().data;
        if (waiting.every((document) => document.progress?.next_attempt_at !== undefined || document.status === 'ready' || document.id === ownRetry)) break;
      }
      const [ownRetryJob] = await ctx.services.sql<{ run_after: Date; provider_unavailable_since: Date | null }>('select run_after, provider_unavailable_since from jobs where document_id = ?', [ownRetry]);
      t.same(ownRetryJob, { run_after: ownRetryAt, provider_unavailable_since: null }, 'the document waiting for a retry of its own keeps its time, and does not wait for the provider');
      t.notMatch(waiting.find((document) => document.id === ownRetry).progress?.message ?? '', /waiting for the provider/);
      waiting = waiting.filter((document) => document.id !== ownRetry);
      t.same(waiting.map((document) => document.status), ids.map(() => 'pending'), 'the 69 others wait');
      const postponed = waiting.filter((document) => document.progress.stage === 'queued');
      t.equal(postponed.length, 5, 'the 5 not claimed wait without being tried');
      t.match(postponed[0].progress.message, /^waiting for the provider \(since .*Z, at most 60 s\), which another document of the collection found unavailable: embedding failed: openai answered 503: The engine is currently overloaded$/);
      const nextAttempts = waiting.map((document) => Date.parse(document.progress.next_attempt_at));
      t.ok(Math.max(...nextAttempts) - Math.min(...nextAttempts) < 1000, 'all are tried again together');
      const ownRetryText = 'Harbour note 69 about';
      const claimRequests = fake.requestsTo('openai').filter((request) => !JSON.stringify(request.body.input).includes(ownRetryText));
      t.equal(claimRequests.length, 1, 'one request found the provider down, not one a claim');
      const documents = await waitForIngestion(ctx.app, 'docs', { cookie });
      t.same(documents.map((document) => document.status), [...ids, ownRetry].map(() => 'ready'), 'all are ingested once it answers');
    });

    await t.test('a provider down for longer than PROVIDER_OUTAGE_WAIT_S: the document fails, saying how long it waited', async (t) => {
      const { fake, api, until } = await outageApp(t, backend, 1000);
      fake.failNext('openai', OVERLOADED, 1000);
      const { id } = await api.upload('docs', 'gone.txt', 'A note about the glacier that never gets embedded.');
      const failed = await until(id, (current) => current.status === 'failed');
      t.match(failed.error, /^embedding failed: openai answered 503: The engine is currently overloaded \(the provider was unavailable for [1-9]\d* s, more than PROVIDER_OUTAGE_WAIT_S: not tried again\)$/);
      t.equal(failed.progress.stage, 'embedding');
      t.equal(failed.chunk_count, 0);
      t.ok(fake.requestsTo('openai').length >= 2, `tried more than once (${fake.requestsTo('openai').length})`);
    });
  });
}

t.test('PROVIDER_OUTAGE_WAIT_S=0: a provider\'s outage counts as an attempt, and the third fails the document', async (t) => {
  const { fake, api, until, attemptsOf } = await outageApp(t, 'pglite', 0);
  fake.failNext('openai', OVERLOADED, 1000);
  const { id } = await api.upload('docs', 'counted.txt', 'A note about the violin workshop.');
  const failed = await until(id, (current) => current.status === 'failed');
  t.equal(failed.error, 'embedding failed: openai answered 503: The engine is currently overloaded');
  t.equal(fake.requestsTo('openai').length, 3);
  t.equal(await attemptsOf(id), 3);
});
