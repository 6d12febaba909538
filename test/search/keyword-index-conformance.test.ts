/**
 * One conformance suite for every KeywordIndex implementation: memory and sql on PGlite, and on
 * PostgreSQL too when TEST_DATABASE_URL is set. Scores are checked against the in-memory
 * reference index of src/search/bm25.ts, built from the same chunks of the same partition.
 */
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { scratchDatabaseUrl } from '../support/test-app.js';
import { openDatabase } from '../../src/db/database.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import type { SqlRunner } from '../../src/plugins.js';
import { Bm25Index } from '../../src/search/bm25.js';
import { parseFilter } from '../../src/search/filters/parse-filter.js';
import { matchesFilter } from '../../src/search/filters/match-filter.js';
import type { KeywordEntry, KeywordHit, KeywordIndex, KeywordSearchRequest } from '../../src/search/keyword/keyword-index.js';
import { createMemoryKeywordIndex } from '../../src/search/keyword/memory-keyword-index.js';
import { packDueTerms } from '../../src/search/keyword/keyword-posting-packer.js';
import { createSqlKeywordIndex } from '../../src/search/keyword/sql-keyword-index.js';

type Backend = 'pglite' | 'postgresql';
const factories: Record<KeywordIndex['name'], (sql: SqlRunner) => KeywordIndex> = {
  memory: createMemoryKeywordIndex,
  sql: createSqlKeywordIndex,
};

const corpusTexts = [
  'Experimental investigation of the aerodynamics of a wing in a slipstream.',
  'Boundary layer flows over heated plates; heat transfer in the boundary layer.',
  'Supersonic aircraft wings flutter at high speed.',
  'Wings of aircraft at supersonic speed: a flutter analysis of wings.',
  'A note on the theory of flutter.',
  'Laminar boundary layer separation on a flat plate with suction.',
  'Heat transfer to a blunt body in hypersonic flow.',
  'The and of', // stop words only: no terms, but still a chunk of length 0
  '',
  'Slipstream effects on the lift of a wing with flaps at low speed.',
];
const metadataOf = (index: number): Record<string, unknown> => ({
  type: index % 3 === 0 ? 'report' : 'note',
  year: 2015 + index,
  author: { name: index % 2 === 0 ? 'Ada' : 'Grace' },
  tags: index % 4 === 0 ? ['aero', 'heat'] : ['aero'],
});
const queries = [
  'boundary layer',
  'supersonic flutter of wings',
  'heat heat transfer',
  'wing slipstream lift',
  'flutter',
  'hypersonic blunt body flow speed',
];
const closeEnough = (actual: number, expected: number) => Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected));

/** What the reference index returns for `entries` (one partition), ties by ascending key. */
function referenceHits(entries: KeywordEntry[], query: string, topK: number, options: { k1?: number; b?: number; filter?: unknown } = {}): KeywordHit[] {
  const index = new Bm25Index(options.k1, options.b);
  for (const entry of entries) index.add(String(entry.key), entry.text);
  const filter = parseFilter(options.filter);
  const metadataByKey = new Map(entries.map((entry) => [entry.key, entry.metadata]));
  return index
    .search(query, entries.length)
    .map((hit) => ({ key: Number(hit.id), score: hit.score }))
    .filter((hit) => !filter || matchesFilter(filter, metadataByKey.get(hit.key)!))
    .sort((left, right) => right.score - left.score || left.key - right.key)
    .slice(0, topK);
}

function sameHits(t: Test, actual: KeywordHit[], expected: KeywordHit[], message: string): void {
  t.same(actual.map((hit) => hit.key), expected.map((hit) => hit.key), `${message}: keys`);
  const mismatched = actual.filter((hit, index) => !closeEnough(hit.score, expected[index]?.score ?? Number.NaN));
  t.same(mismatched, [], `${message}: scores`);
}

/** The chunks table (the source of truth) and the index under test, changed together as the service does. */
class Fixture {
  private nextKey = 1;
  constructor(
    readonly sql: SqlRunner,
    public index: KeywordIndex,
    /** Runs before each change: the packed sql suite packs every changed term there. */
    private readonly beforeChange: () => Promise<unknown> = async () => undefined,
  ) {}

  keys(count: number): number[] {
    return Array.from({ length: count }, () => this.nextKey++);
  }

  async newCollection(): Promise<string> {
    const id = randomUUID();
    await this.sql(
      `insert into collections (id, name, embedding_provider, embedding_model, dimension, chunk_size, chunk_overlap,
         chunk_strategy, default_top_k, default_min_score, default_search_mode, created_at, updated_at)
       values (?, ?, 'local', 'test', 384, 800, 100, 'recursive', 10, 0, 'keyword', now(), now())`,
      [id, `c-${id.slice(0, 8)}`],
    );
    return id;
  }

  async put(collectionId: string, entries: KeywordEntry[]): Promise<void> {
    await this.beforeChange();
    const rows = [...new Map(entries.map((entry) => [entry.key, entry])).values()];
    await this.sql(
      `insert into chunks (key, id, collection_id, chunk_index, text, metadata, tenant, created_at)
       select row.key, 'chunk-' || row.key, ?::uuid, 0, row.text, row.metadata, row.tenant, now()
       from unnest(?::bigint[], ?::text[], ?::jsonb[], ?::text[]) as row (key, text, metadata, tenant)
       on conflict (key) do update set text = excluded.text, metadata = excluded.metadata, tenant = excluded.tenant`,
      [
        collectionId,
        rows.map((row) => row.key),
        rows.map((row) => row.text),
        rows.map((row) => JSON.stringify(row.metadata)),
        rows.map((row) => row.tenant),
      ],
    );
    await this.index.add(collectionId, entries);
  }

  async delete(collectionId: string, keys: number[]): Promise<void> {
    await this.beforeChange();
    await this.sql('delete from chunks where key = any(?::bigint[])', [keys]);
    await this.index.remove(collectionId, keys);
  }

  corpus(tenant: string | null, texts = corpusTexts): KeywordEntry[] {
    return this.keys(texts.length).map((key, index) => ({ key, text: texts[index], metadata: metadataOf(index), tenant }));
  }
}


/**
 * `packed`: before each change, every term changed since is packed (keyword-posting-packer.ts), so
 * searches read packed postings, removals recorded against them and rows not packed yet together.
 */
const suites: Array<{ name: KeywordIndex['name']; backend: Backend; packed?: boolean }> = [
  { name: 'memory', backend: 'pglite' },
  { name: 'sql', backend: 'pglite' },
  { name: 'sql', backend: 'pglite', packed: true },
  ...(process.env.TEST_DATABASE_URL
    ? ([{ name: 'sql', backend: 'postgresql' }, { name: 'sql', backend: 'postgresql', packed: true }, { name: 'memory', backend: 'postgresql' }] as const)
    : []),
];
const packEveryChange = { minimumChanges: 1, changeShare: 0, termsPerRound: 1_000_000 };

for (const suite of suites) {
  t.test(`${suite.name} keyword index on ${suite.backend}${suite.packed ? ', packed before each change' : ''}`, async (t) => {
    const databaseUrl = suite.backend === 'postgresql' ? await scratchDatabaseUrl(t, { migrated: true }) : undefined;
    const db = await openDatabase({ databaseUrl });
    t.teardown(() => db.close());
    const sql = createSqlRunner(db);
    let packedTerms = 0;
    const packChangedTerms = async () => {
      const { packed, skipped } = await packDueTerms(sql, packEveryChange);
      t.equal(skipped, 0, 'no term skipped: nothing else writes');
      packedTerms += packed;
    };
    const fixture = new Fixture(sql, factories[suite.name](sql), suite.packed ? packChangedTerms : undefined);
    t.equal(fixture.index.name, suite.name);
    const search = (request: Partial<KeywordSearchRequest> & { collectionId: string; query: string }) =>
      fixture.index.search({ topK: 10, ...request });

    const main = await fixture.newCollection();
    const mainEntries = fixture.corpus(null);
    await fixture.put(main, mainEntries);

    await t.test('scores equal the reference BM25 index, in order', async (t) => {
      for (const query of queries) {
        sameHits(t, await search({ collectionId: main, query }), referenceHits(mainEntries, query, 10), query);
      }
      sameHits(t, await search({ collectionId: main, query: 'boundary wings', topK: 2 }), referenceHits(mainEntries, 'boundary wings', 2), 'topK 2');
      const tuned = { k1: 1.2, b: 0.75 };
      sameHits(t, await search({ collectionId: main, query: 'flutter wings', ...tuned }), referenceHits(mainEntries, 'flutter wings', 10, tuned), 'k1 1.2 b 0.75');
      t.same(await search({ collectionId: main, query: 'boundary', tenant: null }), await search({ collectionId: main, query: 'boundary' }), 'null tenant = the only partition');
    });

    await t.test('equal scores are ordered by ascending key', async (t) => {
      const collection = await fixture.newCollection();
      const [first, second, third] = fixture.keys(3);
      // Added in descending key order, so insertion order cannot explain the result.
      const entries = [third, second, first].map((key) => ({ key, text: 'identical rotor blade text', metadata: {}, tenant: null }));
      await fixture.put(collection, [...entries, { key: fixture.keys(1)[0], text: 'rotor', metadata: {}, tenant: null }]);
      const hits = await search({ collectionId: collection, query: 'blade' });
      t.same(hits.map((hit) => hit.key), [first, second, third]);
      t.equal(hits[0].score, hits[2].score);
    });

    await t.test('copies of one text tie exactly on a query of several terms', async (t) => {
      const collection = await fixture.newCollection();
      const copyKeys = fixture.keys(40);
      const others = fixture.corpus(null);
      // Copies interleaved with other chunks in descending key order, so no posting list reaches the
      // copies in key order: each copy's weights must still be added in the same order.
      const entries = [...copyKeys].reverse().flatMap((key, index) => [
        { key, text: 'rotor blade flutter at transonic speed', metadata: {}, tenant: null },
        ...(others[index] ? [others[index]] : []),
      ]);
      await fixture.put(collection, entries);
      const hits = await search({ collectionId: collection, query: 'transonic rotor blade flutter speed', topK: 40 });
      t.same(hits.map((hit) => hit.key), copyKeys);
      t.equal(new Set(hits.map((hit) => hit.score)).size, 1, 'one score for every copy');
    });

    await t.test('keys far apart and beyond 32 bits', async (t) => {
      const collection = await fixture.newCollection();
      // Two keys a trillion apart: the sql index then keeps scores by key in a Map, not an array.
      const base = 2 ** 40;
      const entries = corpusTexts.map((text, index) => ({ key: base + index * (index % 2 === 0 ? 1 : 10 ** 12), text, metadata: metadataOf(index), tenant: null }));
      await fixture.put(collection, entries);
      for (const query of queries) {
        sameHits(t, await search({ collectionId: collection, query }), referenceHits(entries, query, 10), query);
      }
    });

    await t.test('tenants have their own statistics and never see each other', async (t) => {
      const collection = await fixture.newCollection();
      const tenantA = fixture.corpus('a');
      // "flutter" is frequent only in tenant B: it must not lower its idf for tenant A.
      const tenantB = fixture.corpus('b', Array.from({ length: 12 }, (_, index) => `flutter flutter panel ${index} wings`));
      const unassigned = fixture.corpus(null, corpusTexts.slice(0, 4));
      await fixture.put(collection, [...tenantA, ...tenantB, ...unassigned]);
      const before = await search({ collectionId: collection, query: 'supersonic flutter of wings', tenant: 'a' });
      sameHits(t, before, referenceHits(tenantA, 'supersonic flutter of wings', 10), 'tenant a');
      sameHits(t, await search({ collectionId: collection, query: 'flutter panel', tenant: 'b' }), referenceHits(tenantB, 'flutter panel', 10), 'tenant b');
      sameHits(t, await search({ collectionId: collection, query: 'wing', tenant: null }), referenceHits(unassigned, 'wing', 10), 'no tenant');

      await fixture.put(collection, fixture.corpus('b', Array.from({ length: 30 }, () => 'flutter supersonic wings wings')));
      t.same(await search({ collectionId: collection, query: 'supersonic flutter of wings', tenant: 'a' }), before, 'B growing leaves A unchanged');
      const keysOfA = new Set(tenantA.map((entry) => entry.key));
      for (const query of ['flutter', 'panel', 'flutter panel wings supersonic']) {
        const hits = await search({ collectionId: collection, query, tenant: 'a', topK: 100 });
        t.ok(hits.every((hit) => keysOfA.has(hit.key)), `tenant a query "${query}" returns only tenant a keys`);
      }
      t.same(await search({ collectionId: collection, query: 'panel', tenant: 'a' }), [], 'a term only B uses finds nothing for A');
      t.same(await search({ collectionId: collection, query: 'flutter', tenant: 'nobody' }), [], 'unknown tenant');

      // Without a tenant every partition is searched, each chunk scored with its own partition's statistics.
      const everyone = await search({ collectionId: collection, query: 'aircraft wings', topK: 100 });
      const scoreByKey = new Map(everyone.map((hit) => [hit.key, hit.score]));
      for (const hit of await search({ collectionId: collection, query: 'aircraft wings', tenant: 'a' })) {
        t.ok(closeEnough(scoreByKey.get(hit.key) ?? Number.NaN, hit.score), `key ${hit.key} keeps its tenant score`);
      }
      t.ok(everyone.every((hit, index) => index === 0 || everyone[index - 1].score >= hit.score), 'merged best first');
    });

    await t.test('filters select chunks without changing statistics', async (t) => {
      for (const raw of [
        { type: 'report' },
        { 'author.name': 'Ada', year: { $gte: 2017 } },
        { $or: [{ tags: 'heat' }, { $not: { type: 'note' } }] },
        { year: { $in: [2016, 2017, 2021] } },
        { type: 'missing' },
      ]) {
        for (const query of ['boundary layer heat', 'wings flutter slipstream']) {
          const filter = parseFilter(raw);
          sameHits(t, await search({ collectionId: main, query, filter, topK: 3 }), referenceHits(mainEntries, query, 3, { filter: raw }), `${JSON.stringify(raw)} ${query}`);
        }
      }
    });

    await t.test('remove, then search', async (t) => {
      const collection = await fixture.newCollection();
      const entries = fixture.corpus(null);
      await fixture.put(collection, entries);
      // The heated-plates chunk, the flutter note and the stop-words-only chunk (no postings).
      const removed = [entries[1].key, entries[4].key, entries[7].key];
      await fixture.delete(collection, removed);
      await fixture.index.remove(collection, [removed[0], 999_999]); // removing twice or unknown keys changes nothing
      const remaining = entries.filter((entry) => !removed.includes(entry.key));
      for (const query of queries) sameHits(t, await search({ collectionId: collection, query }), referenceHits(remaining, query, 10), query);
      await fixture.delete(collection, remaining.map((entry) => entry.key));
      t.same(await search({ collectionId: collection, query: 'wing' }), [], 'all removed');
      await fixture.put(collection, entries.slice(0, 3));
      sameHits(t, await search({ collectionId: collection, query: 'wing' }), referenceHits(entries.slice(0, 3), 'wing', 10), 'added back');
    });

    await t.test('add replaces by key: text, tenant and metadata', async (t) => {
      const collection = await fixture.newCollection();
      const entries = fixture.corpus('a');
      await fixture.put(collection, entries);
      const replaced = { ...entries[2], text: 'Completely rewritten: rotor blade noise', metadata: { type: 'memo' } };
      const moved = { ...entries[5], tenant: 'b' };
      await fixture.put(collection, [replaced, moved]);
      const tenantA = entries.map((entry) => (entry.key === replaced.key ? replaced : entry)).filter((entry) => entry.key !== moved.key);
      for (const query of [...queries, 'rotor noise']) {
        sameHits(t, await search({ collectionId: collection, query, tenant: 'a' }), referenceHits(tenantA, query, 10), query);
      }
      sameHits(t, await search({ collectionId: collection, query: 'laminar boundary', tenant: 'b' }), referenceHits([moved], 'laminar boundary', 10), 'moved tenant');
      t.same((await search({ collectionId: collection, query: 'rotor', filter: parseFilter({ type: 'memo' }) })).map((hit) => hit.key), [replaced.key]);
      // Within one call the last entry for a key wins.
      const [key] = fixture.keys(1);
      await fixture.put(collection, [
        { key, text: 'first version about propellers', metadata: {}, tenant: 'a' },
        { key, text: 'second version about helicopters', metadata: {}, tenant: 'a' },
      ]);
      t.same(await search({ collectionId: collection, query: 'propellers', tenant: 'a' }), []);
      t.same((await search({ collectionId: collection, query: 'helicopters', tenant: 'a' })).map((hit) => hit.key), [key]);
    });

    await t.test('dropCollection forgets one collection only', async (t) => {
      const collection = await fixture.newCollection();
      const entries = fixture.corpus('a');
      await fixture.put(collection, entries);
      // As the service does: the chunks go (cascade on collection delete), then the index.
      await sql('delete from chunks where collection_id = ?::uuid', [collection]);
      await fixture.index.dropCollection(collection);
      t.same(await search({ collectionId: collection, query: 'flutter', tenant: 'a' }), []);
      t.same(await search({ collectionId: collection, query: 'flutter' }), []);
      t.ok((await search({ collectionId: main, query: 'flutter' })).length > 0, 'other collections keep their index');
      await fixture.put(collection, entries.slice(0, 2));
      sameHits(t, await search({ collectionId: collection, query: 'wing', tenant: 'a' }), referenceHits(entries.slice(0, 2), 'wing', 10), 'usable again');
    });

    await t.test('clearDeletedRows keeps the entries of the rows present, with statistics to match', async (t) => {
      const collection = await fixture.newCollection();
      const old = [...fixture.corpus('a'), ...fixture.corpus('b')];
      await fixture.put(collection, old);
      // Rows written since the truncate deleted the old ones, in both partitions.
      const kept = [...fixture.corpus('a', corpusTexts.slice(0, 4)), ...fixture.corpus('b', corpusTexts.slice(5, 8))];
      await fixture.put(collection, kept);
      await fixture.put(main, mainEntries.slice(0, 1)); // the packed suites pack the kept rows' terms here
      if (suite.packed && suite.name === 'sql') {
        const [packed] = await sql<{ count: number }>('select count(*)::int as count from keyword_postings where collection_id = ? and packed and chunk_key = any(?::bigint[])', [collection, kept.map((entry) => entry.key)]);
        t.ok(packed!.count > 0, 'some kept postings were packed');
      }
      await sql('delete from chunks where key = any(?::bigint[])', [old.map((entry) => entry.key)]);
      await fixture.index.clearDeletedRows(collection);
      for (const query of queries) {
        for (const tenant of ['a', 'b']) {
          const expected = referenceHits(kept.filter((entry) => entry.tenant === tenant), query, 10);
          sameHits(t, await search({ collectionId: collection, query, tenant }), expected, `${query} (${tenant})`);
        }
      }
      if (suite.name === 'sql') {
        const [stats] = await sql<{ chunks: number }>('select sum(chunk_count)::int as chunks from keyword_stats where collection_id = ?', [collection]);
        t.equal(stats!.chunks, kept.length, 'statistics count the kept chunks only');
      }
      t.ok((await search({ collectionId: main, query: 'flutter' })).length > 0, 'other collections keep their index');
      const added = fixture.corpus('a', corpusTexts.slice(8));
      await fixture.put(collection, added);
      const tenantA = [...kept, ...added].filter((entry) => entry.tenant === 'a');
      sameHits(t, await search({ collectionId: collection, query: 'wing slipstream lift', tenant: 'a' }), referenceHits(tenantA, 'wing slipstream lift', 10), 'written to again');
    });

    await t.test('empty and stop-word queries find nothing', async (t) => {
      t.same(await search({ collectionId: main, query: '' }), []);
      t.same(await search({ collectionId: main, query: 'the and of !!' }), []);
      t.same(await search({ collectionId: main, query: 'flutter', topK: 0 }), []);
      t.same(await search({ collectionId: main, query: 'zeppelin' }), []);
      t.same(await search({ collectionId: randomUUID(), query: 'flutter' }), [], 'unknown collection');
    });

    await t.test('thousands of chunks: paged rebuild, churn and compaction', async (t) => {
      const collection = await fixture.newCollection();
      const vocabulary = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'theta'];
      const textOf = (index: number) => `${vocabulary[index % 7]} ${vocabulary[(index * 3) % 7]} word${index % 50} note${index % 13} ${index % 11 === 0 ? 'rare' : ''}`;
      // ~26,000 postings: the sql index writes them in two transactions.
      const entries = fixture.keys(5200).map((key, index) => ({ key, text: textOf(index), metadata: { n: index }, tenant: null }));
      await fixture.put(collection, entries);
      const rebuilt = factories[suite.name](sql); // reads the 5,200 chunks in two pages
      t.teardown(() => rebuilt.close());
      for (const query of ['alpha rare', 'word7 gamma']) {
        const request = { collectionId: collection, query, topK: 20 };
        sameHits(t, await rebuilt.search(request), referenceHits(entries, query, 20), `rebuilt: ${query}`);
      }
      const removed = new Set(entries.filter((_, index) => index % 3 !== 0).map((entry) => entry.key));
      await fixture.delete(collection, [...removed]);
      const remaining = entries.filter((entry) => !removed.has(entry.key));
      for (const query of ['alpha rare', 'word7 gamma', 'zeta zeta theta']) {
        sameHits(t, await search({ collectionId: collection, query, topK: 20 }), referenceHits(remaining, query, 20), query);
      }
      // A filter few of ~500 matching chunks pass, and one none pass: the sql index checks its
      // best-scored chunks against the filter in rounds of growing size until it has enough.
      // Equality goes through the metadata index too (migration 0018).
      const filters = [{ n: { $gte: 5000 } }, { n: { $lt: 0 } }, { n: 4200 }, { n: -1 }, { n: { $in: [42, 4200, 5199] } }];
      for (const raw of filters) {
        const request = { collectionId: collection, query: 'alpha word7', filter: parseFilter(raw), topK: 20 };
        sameHits(t, await search(request), referenceHits(remaining, request.query, 20, { filter: raw }), `${JSON.stringify(raw)} ${request.query}`);
      }
      if (suite.name === 'sql') {
        // ~280 of the ~1,730 chunks left match the query. After a first round of lookups, a
        // filter the metadata index serves is scanned for (it reads the few rows passing), while
        // a range is looked up by key until the scored chunks run out, cheaper than a full scan.
        const statements: string[] = [];
        const recording = Object.assign(
          (query: string, params?: unknown[]) => {
            statements.push(query);
            return sql(query, params);
          },
          { transaction: sql.transaction, dialect: sql.dialect },
        ) as SqlRunner;
        const recorded = createSqlKeywordIndex(recording);
        const stepsOf = async (raw: Record<string, unknown>) => {
          statements.length = 0;
          const request = { collectionId: collection, query: 'alpha word7', filter: parseFilter(raw), topK: 20 };
          sameHits(t, await recorded.search(request), referenceHits(remaining, request.query, 20, { filter: raw }), `recorded ${JSON.stringify(raw)}`);
          return statements.slice(1).map((statement) => (statement.includes('chunk.key = any') ? 'lookup' : statement.includes('chunk.collection_id =') ? 'scan' : 'other'));
        };
        t.same(await stepsOf({ n: 4200 }), ['lookup', 'scan'], 'one value: a round of lookups, then a scan of what the index finds');
        t.same(await stepsOf({ n: -1 }), ['lookup', 'scan'], 'a value no chunk has: the same');
        t.same(await stepsOf({ n: { $lt: 0 } }), ['lookup', 'lookup'], 'a range none pass: lookups until the scored chunks run out');
      }
    });

    await t.test('a new instance rebuilt from the database answers identically', async (t) => {
      const requests: Array<Omit<KeywordSearchRequest, 'topK'>> = [];
      const collections = await sql<{ collection_id: string; tenant: string | null }>('select distinct collection_id, tenant from chunks');
      for (const { collection_id: collectionId, tenant } of collections) {
        for (const query of [...queries, 'alpha rare', 'flutter panel']) {
          requests.push({ collectionId, query, tenant }, { collectionId, query }, { collectionId, query, filter: parseFilter({ type: 'report' }) });
        }
      }
      const before = await Promise.all(requests.map((request) => fixture.index.search({ ...request, topK: 25 })));
      let pageQueries = 0;
      const countingSql = Object.assign(
        <Row>(query: string, params?: unknown[]) => {
          if (query.includes('from chunks')) pageQueries += 1;
          return sql<Row>(query, params);
        },
        { transaction: sql.transaction, dialect: sql.dialect },
      ) as SqlRunner;
      const rebuilt = factories[suite.name](countingSql);
      t.teardown(() => rebuilt.close());
      const after = await Promise.all(requests.map((request) => rebuilt.search({ ...request, topK: 25 })));
      t.same(after, before, `${requests.length} searches`);
      if (suite.name === 'memory') {
        t.equal(pageQueries, new Set(collections.map((row) => row.collection_id)).size, 'one load per collection, shared by concurrent callers');
      }
    });

    if (suite.name === 'sql') {
      await t.test('scores equal the memory index bit for bit', async (t) => {
        const memory = createMemoryKeywordIndex(sql);
        t.teardown(() => memory.close());
        const collections = await sql<{ collection_id: string; tenant: string | null }>('select distinct collection_id, tenant from chunks');
        let compared = 0;
        for (const { collection_id: collectionId, tenant } of collections) {
          for (const query of [...queries, 'alpha rare', 'word7 gamma zeta']) {
            for (const request of [{ collectionId, query, tenant }, { collectionId, query, filter: parseFilter({ type: 'report' }) }]) {
              const hits = await fixture.index.search({ ...request, topK: 50 });
              t.strictSame(hits, await memory.search({ ...request, topK: 50 }), `${query} in ${collectionId} ${JSON.stringify(request.tenant ?? null)}`);
              compared += hits.length;
            }
          }
        }
        t.ok(compared > 100, `${compared} hits compared`);
      });
    }

    if (suite.packed) t.ok(packedTerms > 100, `${packedTerms} terms packed along the way`);
    await fixture.index.close();
  });
}
