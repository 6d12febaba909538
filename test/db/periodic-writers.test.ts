import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { ApiKeyUsageTracker } from '../../src/auth/api-key-usage-tracker.js';
import { PeriodicWriter } from '../../src/db/periodic-writer.js';
import { QueryEventRecorder } from '../../src/search/query-events.js';
import { failingOnce, forkWithExecuteSpy } from '../support/sql-runner-spy.js';
import { adminTestApp, buildTestApp, createTestCollection } from '../support/test-app.js';

t.test('a periodic writer never overlaps its writes and goes on after a failed one', async (t) => {
  const log: string[] = [];
  let running = 0;
  let calls = 0;
  class SlowWriter extends PeriodicWriter {
    protected async write(): Promise<void> {
      calls += 1;
      running += 1;
      if (running > 1) log.push('overlap');
      await new Promise((resolve) => setTimeout(resolve, 5));
      running -= 1;
      if (calls === 1) throw new Error('first write fails');
      log.push(`write ${calls}`);
    }
  }
  const writer = new SlowWriter(60_000, () => undefined);
  const first = writer.flush();
  const second = writer.flush();
  await t.rejects(first, /first write fails/);
  await second;
  await writer.flush();
  await writer.stop();
  t.same(log, ['write 2', 'write 3', 'write 4']);
});

t.test('query events that could not be written are written with the next batch', async (t) => {
  const { app, services, cookie } = await adminTestApp(t, 'pglite');
  const { id } = await createTestCollection(app, { cookie }, { name: 'events' });
  const recorder = new QueryEventRecorder(failingOnce(services.sql, 'insert into query_events'), () => undefined);
  const event = (query: string) => ({ collectionId: id, query, searchMode: 'hybrid', resultCount: 1, latencyMs: 1, cached: false, at: new Date() });
  recorder.record(event('first'));
  await t.rejects(recorder.flush(), /database away/);
  recorder.record(event('second'));
  await recorder.stop();
  const rows = await services.sql<{ query: string }>('select query from query_events where collection_id = ? order by query', [id]);
  t.same(rows.map((row) => row.query), ['first', 'second']);
});

t.test('while the database refuses query events, only the newest 10,000 are kept', async (t) => {
  const { app, services, cookie } = await adminTestApp(t, 'pglite');
  const { id } = await createTestCollection(app, { cookie }, { name: 'bounded-events' });
  const recorder = new QueryEventRecorder(failingOnce(services.sql, 'insert into query_events'), () => undefined);
  for (let index = 0; index < 10_005; index++) {
    recorder.record({ collectionId: id, query: `q${index}`, searchMode: 'keyword', resultCount: 0, latencyMs: 1, cached: false, at: new Date() });
  }
  await t.rejects(recorder.flush(), /database away/);
  await recorder.stop();
  const [counted] = await services.sql<{ events: number | string; oldest: string }>(
    `select count(*) as events, min((substr(query, 2))::int) as oldest from query_events where collection_id = ?`, [id],
  );
  t.equal(Number(counted!.events), 10_000);
  t.equal(Number(counted!.oldest), 5, 'the five oldest were dropped');
});

t.test('API-key uses that could not be written are written with the next batch', async (t) => {
  const { app, services, cookie } = await adminTestApp(t, 'pglite');
  const created = (await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name: 'tracked' } })).json() as { id: string };
  let failed = false;
  const fork = forkWithExecuteSpy(services.db, () => {
    if (failed) return;
    failed = true;
    throw new Error('database away');
  });
  const tracker = new ApiKeyUsageTracker(fork, 60_000);
  const usedAt = new Date('2026-01-02T03:04:05.000Z');
  tracker.markUsed(created.id, usedAt);
  await t.rejects(tracker.flush(), /database away/);
  await tracker.stop();
  const rows = await services.sql<{ last_used_at: Date | string }>('select last_used_at from api_keys where id = ?', [created.id]);
  t.equal(new Date(rows[0]!.last_used_at).toISOString(), usedAt.toISOString());
});

t.test('the uses of several API keys are written in one statement, each key keeping its latest use', async (t) => {
  const { app, services, cookie } = await adminTestApp(t, 'pglite');
  const ids: string[] = [];
  for (const name of ['first', 'second', 'third', 'unused']) {
    ids.push(((await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: { name } })).json() as { id: string }).id);
  }
  const statements: string[] = [];
  const fork = forkWithExecuteSpy(services.db, (query) => statements.push(query));
  const tracker = new ApiKeyUsageTracker(fork, 60_000);
  const at = (second: number) => new Date(`2026-03-04T05:06:${String(second).padStart(2, '0')}.000Z`);
  tracker.markUsed(ids[0]!, at(1));
  tracker.markUsed(ids[1]!, at(2));
  tracker.markUsed(ids[2]!, at(3));
  tracker.markUsed(ids[0]!, at(4));
  await tracker.flush();
  t.equal(statements.length, 1, 'one statement for three keys');
  // A use recorded late with an older time does not move a key's last use back.
  tracker.markUsed(ids[1]!, at(0));
  await tracker.stop();
  const rows = await services.sql<{ id: string; last_used_at: Date | string | null }>('select id, last_used_at from api_keys where id = any(?::uuid[])', [ids]);
  const lastUse = new Map(rows.map((row) => [row.id, row.last_used_at === null ? null : new Date(row.last_used_at).toISOString()]));
  t.same(ids.map((id) => lastUse.get(id)), [at(4).toISOString(), at(2).toISOString(), at(3).toISOString(), null]);
});

t.test('shutdown goes on after a failed step: pending embedding usage is still written', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-shutdown-'));
  const testApp = await buildTestApp('pglite', {}, { dataDir });
  t.teardown(async () => {
    await testApp.app.close();
    await testApp.services.db.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const { services } = testApp;
  services.queryRuntime.events.stop = () => Promise.reject(new Error('query events could not be written'));
  services.embeddingUsage.record({ collectionId: '00000000-0000-4000-8000-000000000002', provider: 'openai', model: 'm', texts: 1, tokens: 3, cacheHits: 0, cacheMisses: 1 });
  await t.rejects(services.stop(), /query events could not be written/);
  const rows = await services.sql<{ tokens: string | number }>('select tokens from embedding_usage');
  t.same(rows.map((row) => Number(row.tokens)), [3], 'the step after the failed one ran');
  await t.rejects(services.indexes.vectorStore.count('00000000-0000-4000-8000-000000000002'), /closed/, 'and so did the last ones: the vector store is closed');
});

t.test('query events of a collection deleted while they are written are dropped without an error', { skip: !process.env.TEST_DATABASE_URL && 'PostgreSQL only (TEST_DATABASE_URL)' }, async (t) => {
  const { app, services, cookie } = await adminTestApp(t, 'postgresql');
  const { id: doomed } = await createTestCollection(app, { cookie }, { name: 'doomed' });
  const { id: kept } = await createTestCollection(app, { cookie }, { name: 'kept' });
  const deleting = new pg.Client({ connectionString: services.config.databaseUrl });
  await deleting.connect();
  t.teardown(() => deleting.end());
  // The collection is deleted by a transaction that has not committed when the events are written:
  // they passed the check for their collection, then the foreign key refused the whole batch.
  await deleting.query('begin');
  await deleting.query('delete from collections where id = $1', [doomed]);
  const errors: unknown[] = [];
  const recorder = new QueryEventRecorder(services.sql, (error) => errors.push(error));
  for (const collectionId of [doomed, kept]) recorder.record({ collectionId, query: 'tides', searchMode: 'keyword', resultCount: 1, latencyMs: 1, cached: false, at: new Date() });
  const flushed = recorder.flush();
  await new Promise((resolve) => setTimeout(resolve, 200));
  await deleting.query('commit');
  await flushed;
  await recorder.stop();
  t.same(errors, []);
  const rows = await services.sql<{ collection_id: string }>('select collection_id from query_events');
  t.same(rows.map((row) => row.collection_id), [kept], "the other collection's event is written");
});
