import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import { EmbeddingUsageLedger } from '../../src/embedding/embedding-usage.js';
import { failingOnce, sqlRunnerWith } from '../support/sql-runner-spy.js';

const COLLECTION = '00000000-0000-4000-8000-000000000001';
const call = (model: string, tokens: number, cacheHits = 0) => ({
  collectionId: COLLECTION, provider: 'openai', model, texts: 2, tokens, cacheHits, cacheMisses: 2 - cacheHits,
});

/** A SQL runner over a migrated in-memory database, closed when `t` ends. */
async function inMemorySql(t: { teardown(fn: () => Promise<void>): void }) {
  const database = await openDatabase({});
  t.teardown(() => database.close());
  return createSqlRunner(database);
}

t.test('usage is added up in memory and written in one statement before it is read', async (t) => {
  const sql = await inMemorySql(t);
  const statements: string[] = [];
  const counting = sqlRunnerWith(sql, (query) => statements.push(query.trim().split(/\s+/)[0]!));
  const ledger = new EmbeddingUsageLedger(counting);
  ledger.record(call('text-embedding-3-small', 10));
  ledger.record(call('text-embedding-3-small', 5, 1));
  ledger.record(call('text-embedding-3-large', 7));
  t.same(statements, [], 'recording writes nothing yet');
  const usage = await ledger.forCollection(COLLECTION);
  t.same(statements, ['insert', 'select'], 'one insert for three calls, then the read');
  t.match(usage, { tokens: 22, texts: 6, cache_hits: 1, cache_misses: 5 });
  ledger.record(call('text-embedding-3-small', 1));
  t.match(await ledger.forCollection(COLLECTION), { tokens: 23, texts: 8 }, 'later calls add to the stored row');
});

t.test('counts of a failed write are kept and written with the next one', async (t) => {
  const sql = await inMemorySql(t);
  const flaky = failingOnce(sql, 'insert into embedding_usage');
  const ledger = new EmbeddingUsageLedger(flaky);
  ledger.record(call('m', 10));
  await t.rejects(ledger.flush(), /database away/);
  ledger.record(call('m', 4));
  t.match(await ledger.forCollection(COLLECTION), { tokens: 14, texts: 4 }, 'nothing lost, nothing counted twice');
});

t.test('stop writes what is pending, so a restart keeps it', async (t) => {
  const sql = await inMemorySql(t);
  const ledger = new EmbeddingUsageLedger(sql);
  ledger.start();
  ledger.record(call('m', 9));
  await ledger.stop();
  t.match(await new EmbeddingUsageLedger(sql).total(), { tokens: 9, texts: 2 });
});

t.test('a read answers with what is stored when the pending counts cannot be written, and reports the failure', async (t) => {
  const sql = await inMemorySql(t);
  const reported: unknown[] = [];
  const stored = new EmbeddingUsageLedger(sql);
  stored.record(call('m', 5));
  await stored.flush();
  const ledger = new EmbeddingUsageLedger(failingOnce(sql, 'insert into embedding_usage'), (error) => reported.push(error));
  ledger.record(call('m', 7));
  t.match(await ledger.forCollection(COLLECTION), { tokens: 5 }, 'the stored row, without the unwritten call');
  t.match(reported, [/database away/]);
  t.match(await ledger.forCollection(COLLECTION), { tokens: 12 }, 'written with the next read');
});
