/**
 * The SQL keyword index's packing of postings (keyword-posting-packer.ts): what makes a term due;
 * that packed values are in key order; that the packer skips a round only when nothing was written
 * since a round that left nothing due;
 * that a term whose rows not packed, or whose packed value, another transaction holds is skipped
 * and packed later; that a deletion of packed postings running beside a packing keeps its removals;
 * and, through the HTTP API, that the service packs on its own and answers the same before and
 * after. Every search result against the memory index is checked in keyword-index-conformance.test.ts.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t, { type Test } from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import type { SqlRunner } from '../../src/plugins.js';
import type { KeywordEntry, KeywordIndex } from '../../src/search/keyword/keyword-index.js';
import { createLogger } from '../../src/logger.js';
import { encodedPostingBytes } from '../../src/search/keyword/encoded-postings.js';
import { KeywordPostingPacker, packDueTerms } from '../../src/search/keyword/keyword-posting-packer.js';
import { createSqlKeywordIndex } from '../../src/search/keyword/sql-keyword-index.js';
import { adminTestApp, scratchDatabaseUrl, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';

async function newCollection(sql: SqlRunner): Promise<string> {
  const id = randomUUID();
  await sql(
    `insert into collections (id, name, embedding_provider, embedding_model, dimension, chunk_size, chunk_overlap,
       chunk_strategy, default_top_k, default_min_score, default_search_mode, created_at, updated_at)
     values (?, ?, 'local', 'test', 384, 800, 100, 'recursive', 10, 0, 'keyword', now(), now())`,
    [id, `c-${id.slice(0, 8)}`],
  );
  return id;
}

/** The chunk rows first: the SQL index writes postings only for chunks whose rows exist. */
async function addChunks(sql: SqlRunner, index: KeywordIndex, collectionId: string, entries: KeywordEntry[]): Promise<void> {
  await sql(
    `insert into chunks (key, id, collection_id, chunk_index, text, metadata, tenant, created_at)
     select row.key, 'chunk-' || row.key, ?::uuid, 0, row.text, '{}'::jsonb, null, now()
     from unnest(?::bigint[], ?::text[]) as row (key, text)`,
    [collectionId, entries.map((entry) => entry.key), entries.map((entry) => entry.text)],
  );
  await index.add(collectionId, entries);
}

async function termState(sql: SqlRunner, collectionId: string, term: string) {
  const [state] = await sql<{ packed: number | null; loose: number }>(
    `select (select posting_count from keyword_packed_postings where collection_id = ?::uuid and term = ?) as packed,
            (select count(*)::int from keyword_postings where collection_id = ?::uuid and term = ? and not packed) as loose`,
    [collectionId, term, collectionId, term],
  );
  return state!;
}

/** The SQL index over a new embedded database, with one collection. */
async function embeddedIndex(t: Test) {
  const db = await openDatabase({});
  t.teardown(() => db.close());
  const sql = createSqlRunner(db);
  return { sql, index: createSqlKeywordIndex(sql), collectionId: await newCollection(sql) };
}

/** The SQL index over a migrated scratch PostgreSQL database, with one collection. */
async function postgresqlIndex(t: Test) {
  const url = await scratchDatabaseUrl(t, { migrated: true });
  const db = await openDatabase({ databaseUrl: url });
  t.teardown(() => db.close());
  const sql = createSqlRunner(db);
  return { url, sql, index: createSqlKeywordIndex(sql), collectionId: await newCollection(sql) };
}

/** Another connection with a transaction begun: what a concurrent writer, deletion or packer holds. */
async function transactionOnAnotherConnection(t: Test, url: string): Promise<pg.Client> {
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  t.teardown(() => other.end());
  await other.query('begin');
  return other;
}

t.test('a term is packed once its changes reach 32 and a quarter of its packed postings', async (t) => {
  const { sql, index, collectionId } = await embeddedIndex(t);
  let nextKey = 1;
  const add = (count: number) =>
    addChunks(sql, index, collectionId, Array.from({ length: count }, () => ({ key: nextKey++, text: 'harbour', metadata: {}, tenant: null })));

  await add(31);
  t.same(await packDueTerms(sql), { packed: 0, skipped: 0 }, '31 new postings: not due');
  await add(1);
  t.same(await packDueTerms(sql), { packed: 1, skipped: 0 }, 'the 32nd makes it due');
  t.same(await termState(sql, collectionId, 'harbour'), { packed: 32, loose: 0 });

  await add(168);
  t.same(await packDueTerms(sql), { packed: 1, skipped: 0 });
  t.same(await termState(sql, collectionId, 'harbour'), { packed: 200, loose: 0 }, '200 packed');
  await add(45);
  await index.remove(collectionId, [1, 2, 3, 4]);
  t.same(await packDueTerms(sql), { packed: 0, skipped: 0 }, '45 added and 4 removed: 49 changes, under a quarter of 200');
  t.same(await termState(sql, collectionId, 'harbour'), { packed: 200, loose: 45 });
  await index.remove(collectionId, [5]);
  t.same(await packDueTerms(sql), { packed: 1, skipped: 0 }, 'the 50th change makes it due');
  t.same(await termState(sql, collectionId, 'harbour'), { packed: 240, loose: 0 }, '245 added, 5 removed');
  const [removals] = await sql<{ count: number }>('select count(*)::int as count from keyword_packed_removals');
  t.equal(removals!.count, 0, 'the removals it packed are cleared');
  const hits = await index.search({ collectionId, query: 'harbour', topK: 300 });
  t.equal(hits.length, 240);
  t.notOk(hits.some((hit) => hit.key <= 5), 'no removed chunk comes back');
});

/** The chunk keys of a term's packed value, in the order they are stored. */
async function packedKeys(sql: SqlRunner, collectionId: string, term: string): Promise<number[]> {
  const [row] = await sql<{ postings: Uint8Array }>('select postings from keyword_packed_postings where collection_id = ?::uuid and term = ?', [collectionId, term]);
  const value = Buffer.from(row!.postings);
  return Array.from({ length: value.byteLength / encodedPostingBytes }, (_, index) => Number(value.readBigInt64BE(index * encodedPostingBytes)));
}

t.test('a packed value is in key order, whatever order its postings were written or packed in before', async (t) => {
  const { sql, index, collectionId } = await embeddedIndex(t);
  const harbour = (keys: number[]) => keys.map((key) => ({ key, text: 'harbour', metadata: {}, tenant: null }));
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, position) => from + position);

  await addChunks(sql, index, collectionId, harbour(range(61, 100).reverse()));
  t.same(await packDueTerms(sql), { packed: 1, skipped: 0 });
  t.same(await packedKeys(sql, collectionId, 'harbour'), range(61, 100), 'rows written from the largest key down');

  const interleaved = range(1, 20).flatMap((key) => [key + 140, key]);
  await addChunks(sql, index, collectionId, harbour(interleaved));
  t.same(await packDueTerms(sql), { packed: 1, skipped: 0 });
  t.same(await packedKeys(sql, collectionId, 'harbour'), [...range(1, 20), ...range(61, 100), ...range(141, 160)], 'new keys on both sides merged in');

  // As packing left values before they were kept in key order: the old value, then the new rows
  // (here the 20 postings of keys 1-20 moved to the end).
  const movedBytes = 20 * encodedPostingBytes;
  await sql(
    `update keyword_packed_postings set postings = substr(postings, ${movedBytes + 1}) || substr(postings, 1, ${movedBytes})
     where collection_id = ?::uuid and term = 'harbour'`,
    [collectionId],
  );
  t.equal((await packedKeys(sql, collectionId, 'harbour'))[0], 61, 'a value out of key order');
  await index.remove(collectionId, range(61, 80));
  await addChunks(sql, index, collectionId, harbour(range(21, 32)));
  t.same(await packDueTerms(sql), { packed: 1, skipped: 0 });
  t.same(await packedKeys(sql, collectionId, 'harbour'), [...range(1, 32), ...range(81, 100), ...range(141, 160)], 'sorted at its next packing');
  const hits = await index.search({ collectionId, query: 'harbour', topK: 100 });
  t.same(hits.map((hit) => hit.key).sort((a, b) => a - b), [...range(1, 32), ...range(81, 100), ...range(141, 160)], 'and searched the same');
});

t.test('the packer skips a round when nothing was written since a round that left nothing due', async (t) => {
  const { sql, index, collectionId } = await embeddedIndex(t);
  const packer = new KeywordPostingPacker(sql, createLogger('silent'), 0, { minimumChanges: 32, changeShare: 0.25, termsPerRound: 2 });
  let nextKey = 1;
  const add = (count: number, text: string) =>
    addChunks(sql, index, collectionId, Array.from({ length: count }, () => ({ key: nextKey++, text, metadata: {}, tenant: null })));

  t.same(await packer.packChangedTerms(), { packed: 0, skipped: 0 }, 'the first round looks');
  t.equal(await packer.packChangedTerms(), undefined, 'then, with nothing written, rounds are skipped');
  await add(40, 'harbour');
  t.same(await packer.packChangedTerms(), { packed: 1, skipped: 0 }, 'a write makes the next round look');
  t.equal(await packer.packChangedTerms(), undefined);
  await add(10, 'harbour');
  t.same(await packer.packChangedTerms(), { packed: 0, skipped: 0 }, 'it looks after a write that makes nothing due');
  t.equal(await packer.packChangedTerms(), undefined);
  await index.remove(collectionId, Array.from({ length: 22 }, (_, position) => position + 1));
  t.same(await packer.packChangedTerms(), { packed: 1, skipped: 0 }, 'and after a removal');
  t.same(await termState(sql, collectionId, 'harbour'), { packed: 28, loose: 0 });
  t.equal(await packer.packChangedTerms(), undefined);

  await add(40, 'pier');
  await add(40, 'dock');
  await add(40, 'port');
  t.same(await packer.packChangedTerms(), { packed: 2, skipped: 0 }, 'two terms a round here');
  t.same(await packer.packChangedTerms(), { packed: 1, skipped: 0 }, 'a round that packed as many terms as it may is followed by another');
  t.equal(await packer.packChangedTerms(), undefined);
  const packedCounts = await Promise.all(['pier', 'dock', 'port'].map(async (term) => (await termState(sql, collectionId, term)).packed));
  t.same(packedCounts, [40, 40, 40]);

  await index.dropCollection(collectionId);
  t.same(await packer.packChangedTerms(), { packed: 0, skipped: 0 }, 'a collection dropped changes the fingerprint too');
});

if (process.env.TEST_DATABASE_URL) {
  t.test('PostgreSQL: a term whose rows another transaction holds is skipped, and packed the next round', async (t) => {
    const { url, sql, index, collectionId } = await postgresqlIndex(t);
    const entries = Array.from({ length: 40 }, (_, position) => ({ key: position + 1, text: position < 20 ? 'harbour' : 'harbour lighthouse', metadata: {}, tenant: null }));
    await addChunks(sql, index, collectionId, entries);

    const other = await transactionOnAnotherConnection(t, url);
    await other.query("select 1 from keyword_postings where term = 'harbour' and chunk_key = 7 for update");
    t.same(await packDueTerms(sql, { minimumChanges: 1, changeShare: 0, termsPerRound: 100 }), { packed: 1, skipped: 1 }, 'lighthouse packed, harbour skipped');
    t.same(await termState(sql, collectionId, 'harbour'), { packed: null, loose: 40 }, 'harbour left as it was');
    await other.query('rollback');
    t.same(await packDueTerms(sql, { minimumChanges: 1, changeShare: 0, termsPerRound: 100 }), { packed: 1, skipped: 0 });
    t.same(await termState(sql, collectionId, 'harbour'), { packed: 40, loose: 0 });
  });

  t.test('PostgreSQL: packing again never waits for a deletion of packed postings, whose removal then stays recorded', async (t) => {
    const { url, sql, index, collectionId } = await postgresqlIndex(t);
    const harbour = (from: number, count: number) =>
      Array.from({ length: count }, (_, position) => ({ key: from + position, text: 'harbour', metadata: {}, tenant: null }));
    const packEveryChange = { minimumChanges: 1, changeShare: 0, termsPerRound: 100 };
    await addChunks(sql, index, collectionId, harbour(1, 40));
    t.same(await packDueTerms(sql, packEveryChange), { packed: 1, skipped: 0 });
    await addChunks(sql, index, collectionId, harbour(41, 10));

    // A deletion of packed postings, as sql-keyword-writes.ts writes it, open while the term is packed again.
    const other = await transactionOnAnotherConnection(t, url);
    await other.query(
      `with removed as (delete from keyword_postings where collection_id = $1 and chunk_key = any($2::bigint[]) returning tenant, term, chunk_key, packed)
       insert into keyword_packed_removals (collection_id, tenant, term, chunk_key) select $1, tenant, term, chunk_key from removed where packed`,
      [collectionId, [7, 8]],
    );
    t.same(await packDueTerms(sql, packEveryChange), { packed: 1, skipped: 0 }, 'the rows the deletion holds are not read again');
    t.same(await termState(sql, collectionId, 'harbour'), { packed: 50, loose: 0 }, 'the 10 new postings joined the 40 packed');
    await other.query('commit');

    const keys = async () => (await index.search({ collectionId, query: 'harbour', topK: 100 })).map((hit) => hit.key).sort((a, b) => a - b);
    const expected = Array.from({ length: 50 }, (_, position) => position + 1).filter((key) => key !== 7 && key !== 8);
    t.same(await keys(), expected, 'the removals recorded after the packing\'s snapshot still leave 7 and 8 out');
    t.same(await packDueTerms(sql, packEveryChange), { packed: 1, skipped: 0 }, 'the removals make the term due');
    t.same(await termState(sql, collectionId, 'harbour'), { packed: 48, loose: 0 });
    t.same(await keys(), expected, 'and the same chunks once they are applied');
  });

  t.test('PostgreSQL: a term whose packed value another packer holds is skipped', async (t) => {
    const { url, sql, index, collectionId } = await postgresqlIndex(t);
    const packEveryChange = { minimumChanges: 1, changeShare: 0, termsPerRound: 100 };
    await addChunks(sql, index, collectionId, [{ key: 1, text: 'harbour', metadata: {}, tenant: null }]);
    t.same(await packDueTerms(sql, packEveryChange), { packed: 1, skipped: 0 });
    await addChunks(sql, index, collectionId, [{ key: 2, text: 'harbour', metadata: {}, tenant: null }]);

    const other = await transactionOnAnotherConnection(t, url);
    await other.query("select 1 from keyword_packed_postings where term = 'harbour' for update");
    t.same(await packDueTerms(sql, packEveryChange), { packed: 0, skipped: 1 });
    t.same(await termState(sql, collectionId, 'harbour'), { packed: 1, loose: 1 }, 'left as it was');
    await other.query('rollback');
    t.same(await packDueTerms(sql, packEveryChange), { packed: 1, skipped: 0 });
    t.same(await termState(sql, collectionId, 'harbour'), { packed: 2, loose: 0 });
  });

  t.test('PostgreSQL: the round after one that skipped a term is not skipped, with nothing written', async (t) => {
    const { url, sql, index, collectionId } = await postgresqlIndex(t);
    const packer = new KeywordPostingPacker(sql, createLogger('silent'), 0, { minimumChanges: 1, changeShare: 0, termsPerRound: 100 });
    await addChunks(sql, index, collectionId, [{ key: 1, text: 'harbour', metadata: {}, tenant: null }]);
    const other = await transactionOnAnotherConnection(t, url);
    await other.query("select 1 from keyword_postings where term = 'harbour' for update");
    t.same(await packer.packChangedTerms(), { packed: 0, skipped: 1 });
    await other.query('rollback');
    t.same(await packer.packChangedTerms(), { packed: 1, skipped: 0 });
    t.equal(await packer.packChangedTerms(), undefined);
  });
}

const paragraphs = (name: string) =>
  Array.from({ length: 120 }, (_, index) => `The ${name} harbour, pier ${index}, has a lighthouse${index % 3 === 0 ? ' and a ferry' : ''}.`).join('\n\n');

for (const backend of testBackends()) {
  t.test(`${backend}: the service packs postings on its own and answers the same before and after`, async (t) => {
    const { app, services, admin: headers } = await adminTestApp(t, backend, { keywordIndex: 'sql', keywordPackIntervalMs: 100 });
    const created = await app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'ports', chunk_size: 120, chunk_overlap: 0, chunk_strategy: 'paragraph' } });
    t.equal(created.statusCode, 201, created.body);
    for (const name of ['northern', 'southern']) {
      const uploaded = await uploadDocument(app, headers, 'ports', { filename: `${name}.txt`, content: paragraphs(name), contentType: 'text/plain' });
      t.equal(uploaded.statusCode, 202, uploaded.body);
    }
    const documents = await waitForIngestion(app, 'ports', headers);
    const northern = documents.find((document) => document.filename === 'northern.txt')!;
    const collectionId = (created.json() as { id: string }).id;
    const query = async () => {
      const response = await app.inject({ method: 'POST', url: '/v1/collections/ports/query', headers, payload: { query: 'harbour ferry pier 12', search_mode: 'keyword', top_k: 50, skip_cache: true } });
      t.equal(response.statusCode, 200, response.body);
      return (response.json() as { results: Array<{ id: string; document_id: string; score: number }> }).results.map(({ id, document_id, score }) => ({ id, document_id, score }));
    };
    const settled = async (what: string, done: () => Promise<boolean>) => {
      for (let waited = 0; waited < 20_000 && !(await done()); waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      t.ok(await done(), what);
    };
    const sql = services.sql;
    await settled('every posting of "harbour" packed', async () => {
      const state = await termState(sql, collectionId, 'harbour');
      return state.packed !== null && state.loose === 0;
    });
    const packedAnswer = await query();
    t.ok(packedAnswer.some((hit) => hit.document_id === northern.id) && packedAnswer.some((hit) => hit.document_id !== northern.id), 'both documents answer');

    const deleted = await app.inject({ method: 'DELETE', url: `/v1/collections/ports/documents/${northern.id}`, headers });
    t.equal(deleted.statusCode, 204, deleted.body);
    const afterDeletion = await query();
    t.notOk(afterDeletion.some((hit) => hit.document_id === northern.id), 'the deleted document\'s packed postings no longer count');
    // Every chunk holds "harbour": half its packed postings removed, past 32 and a quarter, so it is
    // packed again. Terms with fewer removals keep them recorded until more changes come.
    const southern = documents.find((document) => document.filename === 'southern.txt')!;
    t.ok(northern.chunk_count >= 32, `${northern.chunk_count} chunks removed`);
    await settled('"harbour" packed again without the removed postings', async () => {
      const [removals] = await sql<{ count: number }>("select count(*)::int as count from keyword_packed_removals where term = 'harbour'");
      return removals!.count === 0 && (await termState(sql, collectionId, 'harbour')).packed === southern.chunk_count;
    });
    t.same(await query(), afterDeletion, 'the same results and scores once repacked');
  });
}
