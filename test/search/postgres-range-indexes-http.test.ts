/**
 * On PostgreSQL, a range filter gets a B-tree index over the field for its collection, built in the
 * background the first time a query asks (metadata-range-indexes.ts); once it is ready, a query
 * whose ranges few chunks pass ranks just those chunks, exactly, in every mode. Shown through the
 * API: the answers before and after the index, the timings that say which way a query went, the
 * collection's stats, tenants, the per-collection limit, and the drop with the collection or its
 * truncation.
 */
import t from 'tap';
import type { App } from '../../src/app.js';
import type { SqlRunner } from '../../src/plugins.js';
import { matchesFilter } from '../../src/search/filters/match-filter.js';
import { parseFilter } from '../../src/search/filters/parse-filter.js';
import { cosineSimilarity as cosine } from '../support/cargo-vectors.js';
import { seededRandom } from '../support/seeded-random.js';
import { adminTestApp, createTestCollection } from '../support/test-app.js';

const DIMENSION = 8;
const COUNT = 3_000;
const TOP_K = 10;
const WORDS = ['harbour', 'lantern', 'granite', 'meadow', 'copper', 'willow'];

interface Row {
  embedding: number[];
  text: string;
  metadata: Record<string, unknown>;
}

/** Metadata with a numeric field, a string field, a nested one, and a field whose values are of mixed types. */
function makeRows(random: () => number, tenants?: string[]): Map<string, Row> {
  const rows = new Map<string, Row>();
  for (let n = 0; n < COUNT; n++) {
    // Mostly numbers; a boolean, an array, a string or null in 4 rows of 50.
    const mixed = [n % 100, true, [n % 100], String(n % 100), null][n % 50] ?? n % 100;
    rows.set(`r${n}`, {
      embedding: Array.from({ length: DIMENSION }, () => random() * 2 - 1),
      text: `${WORDS[n % WORDS.length]} ${WORDS[(n * 7) % WORDS.length]} item ${n}`,
      metadata: {
        batch: Math.floor(n / 50), sku: `sku-${String(n).padStart(5, '0')}`, shelf: { height: n % 300 }, mixed,
        ...(tenants ? { org: tenants[n % tenants.length] } : {}),
      },
    });
  }
  return rows;
}

async function upsertRows(app: App, admin: Record<string, string>, collection: string, rows: Map<string, Row>) {
  const vectors = [...rows].map(([id, row]) => ({ id, text: row.text, embedding: row.embedding, metadata: row.metadata }));
  for (let start = 0; start < vectors.length; start += 1_000) {
    const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/vectors/upsert`, headers: admin, payload: { vectors: vectors.slice(start, start + 1_000) } });
    if (response.statusCode !== 200) throw new Error(response.body);
  }
}

interface Answer {
  ids: string[];
  timings: Record<string, number>;
}

async function query(app: App, admin: Record<string, string>, collection: string, payload: Record<string, unknown>): Promise<Answer> {
  const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/query`, headers: admin, payload: { query: 'harbour lantern', top_k: TOP_K, skip_cache: true, ...payload } });
  if (response.statusCode !== 200) throw new Error(response.body);
  const body = response.json() as { results: Array<{ id: string }>; timings: Record<string, number> };
  return { ids: body.results.map((result) => result.id), timings: body.timings };
}

type RangeIndexState = { field: string; type: string; state: string };

async function rangeIndexes(app: App, admin: Record<string, string>, collection: string): Promise<RangeIndexState[]> {
  const response = await app.inject({ method: 'GET', url: `/v1/collections/${collection}/stats`, headers: admin });
  if (response.statusCode !== 200) throw new Error(response.body);
  return (response.json() as { range_indexes: RangeIndexState[] }).range_indexes;
}

async function waitForReady(app: App, admin: Record<string, string>, collection: string, count: number): Promise<RangeIndexState[]> {
  for (let waited = 0; waited < 20_000; waited += 50) {
    const states = await rangeIndexes(app, admin, collection);
    if (states.filter((state) => state.state === 'ready').length >= count) return states;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${collection}: fewer than ${count} range indexes ready after 20 s`);
}

async function rangeIndexNames(sql: SqlRunner): Promise<string[]> {
  const rows = await sql<{ name: string }>("select relname as name from pg_class where relkind = 'i' and starts_with(relname, 'chunks_range_') order by 1");
  return rows.map((row) => row.name);
}

/** The exact semantic top k of the rows the filter passes. */
function exactTop(rows: Map<string, Row>, filters: unknown, embedding: number[], only?: (row: Row) => boolean): string[] {
  const filter = parseFilter(filters)!;
  return [...rows].filter(([, row]) => matchesFilter(filter, row.metadata) && (!only || only(row)))
    .map(([id, row]) => ({ id, score: cosine(embedding, row.embedding) }))
    // The collection's default min_score.
    .filter((hit) => hit.score >= 0)
    .sort((left, right) => right.score - left.score)
    .slice(0, TOP_K)
    .map((hit) => hit.id);
}

if (!process.env.TEST_DATABASE_URL) {
  t.pass('PostgreSQL only (TEST_DATABASE_URL unset): the embedded store has an index of metadata values of its own');
} else {
  t.test('range filters get an index per field, and a query few chunks pass ranks just those, in every mode', async (t) => {
    const { app, services, admin } = await adminTestApp(t, 'postgresql');
    await createTestCollection(app, admin, { name: 'shelves', dimension: DIMENSION });
    const random = seededRandom(20_261_130);
    const rows = makeRows(random);
    await upsertRows(app, admin, 'shelves', rows);
    t.same(await rangeIndexes(app, admin, 'shelves'), [], 'no range index before a range filter asked');

    // 100 rows of 3,000 in range: 6 x sqrt(10 x 3,000) = 1,040 at most for a top 10, more for hybrid.
    const filters = {
      'a number range': { batch: { $gte: 10, $lt: 12 } },
      'a string range': { sku: { $gte: 'sku-00500', $lt: 'sku-00600' } },
      'a nested field': { 'shelf.height': { $lte: 9 } },
      'ranges and a $ne': { $and: [{ batch: { $gt: 20 } }, { batch: { $lt: 24 } }, { sku: { $ne: 'sku-01100' } }] },
      'an or of two ranges': { $or: [{ batch: { $lt: 1 } }, { sku: { $gt: 'sku-02950' } }] },
      // Booleans and arrays sort above numbers in the index: read, then refused by the filter.
      'values of mixed types': { mixed: { $gt: 95 } },
    } as const;
    const embedding = Array.from({ length: DIMENSION }, () => random() * 2 - 1);
    const before = new Map<string, Record<string, Answer>>();
    for (const [label, filter] of Object.entries(filters)) {
      const answers: Record<string, Answer> = {};
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        answers[mode] = await query(app, admin, 'shelves', { search_mode: mode, ...(mode === 'keyword' ? {} : { embedding }), filters: filter });
      }
      // Later filters may find the indexes earlier ones asked for already built.
      if (before.size === 0) t.equal(answers.semantic!.timings.range_index_ms, undefined, 'the first range query goes on without an index');
      before.set(label, answers);
    }

    const states = await waitForReady(app, admin, 'shelves', 4);
    t.same(states.map((state) => `${state.field}:${state.type}:${state.state}`), [
      'batch:number:ready', 'mixed:number:ready', 'shelf.height:number:ready', 'sku:string:ready',
    ], 'one index a field and type, listed in the collection\'s stats');

    for (const [label, filter] of Object.entries(filters)) {
      const semantic = await query(app, admin, 'shelves', { search_mode: 'semantic', embedding, filters: filter });
      t.ok(semantic.timings.range_index_ms !== undefined, `${label}: ranked through the range index`);
      t.same(semantic.ids, exactTop(rows, filter, embedding), `${label}: the exact semantic top ${TOP_K}`);
      const keyword = await query(app, admin, 'shelves', { search_mode: 'keyword', filters: filter });
      t.ok(keyword.timings.range_index_ms !== undefined, `${label}: keyword through the range index`);
      t.same(keyword.ids, before.get(label)!.keyword!.ids, `${label}: the same keyword answer as without the index`);
      const hybrid = await query(app, admin, 'shelves', { search_mode: 'hybrid', embedding, filters: filter });
      t.ok(hybrid.timings.range_index_ms !== undefined, `${label}: hybrid through the range index`);
      t.equal(hybrid.ids.length, before.get(label)!.hybrid!.ids.length, `${label}: hybrid answers as many as without the index`);
      const filter_ = parseFilter(filter)!;
      t.ok(hybrid.ids.every((id) => matchesFilter(filter_, rows.get(id)!.metadata)), `${label}: every hybrid result passes`);
    }

    // Most rows in range: too many to rank by key, so the query goes on as before.
    const wide = { batch: { $gte: 2 } };
    const wideAnswer = await query(app, admin, 'shelves', { search_mode: 'semantic', embedding, filters: wide });
    t.equal(wideAnswer.timings.range_index_ms, undefined, 'a range most chunks pass is not ranked by key');
    t.equal(wideAnswer.ids.length, TOP_K, 'and is answered all the same');
    // 850 rows in range: above 4 x sqrt(10 x 3,000) = 693, within the 6 x = 1,040 the limit has been since 2026-11-30.
    const middle = { batch: { $lt: 17 } };
    const middleAnswer = await query(app, admin, 'shelves', { search_mode: 'semantic', embedding, filters: middle });
    t.ok(middleAnswer.timings.range_index_ms !== undefined, 'a range 850 of 3,000 chunks pass is ranked by key for a top 10');
    t.same(middleAnswer.ids, exactTop(rows, middle, embedding), 'exactly');
    const negated = await query(app, admin, 'shelves', { search_mode: 'semantic', embedding, filters: { $not: { batch: { $gte: 1 } } } });
    t.equal(negated.timings.range_index_ms, undefined, 'a negated range has no indexable condition');
    t.same(negated.ids, exactTop(rows, { $not: { batch: { $gte: 1 } } }, embedding), 'and is answered by the filter alone');
    for (const mode of ['semantic', 'keyword', 'hybrid']) {
      const empty = await query(app, admin, 'shelves', { search_mode: mode, ...(mode === 'keyword' ? {} : { embedding }), filters: { batch: { $gt: 1_000 } } });
      t.ok(empty.timings.range_index_ms !== undefined, `${mode}: a range no chunk is in is read from the index`);
      t.same(empty.ids, [], `${mode}: and answers nothing`);
    }

    // Rows written after the build are in the index: new rows in range, and rows moved out of it.
    const added = makeRows(seededRandom(7));
    const moved = new Map<string, Row>();
    for (const [id, row] of [...added].slice(0, 20)) moved.set(`new-${id}`, { ...row, metadata: { ...row.metadata, batch: 11 } });
    for (const id of ['r500', 'r510', 'r520']) moved.set(id, { ...rows.get(id)!, metadata: { ...rows.get(id)!.metadata, batch: 99 } });
    await upsertRows(app, admin, 'shelves', moved);
    for (const [id, row] of moved) rows.set(id, row);
    const afterWrites = await query(app, admin, 'shelves', { search_mode: 'semantic', embedding, filters: filters['a number range'] });
    t.ok(afterWrites.timings.range_index_ms !== undefined, 'after writes, still through the index');
    t.same(afterWrites.ids, exactTop(rows, filters['a number range'], embedding), 'and the answer follows the writes');

    // 1,500 rows written after the statistics were gathered, at a value they never saw: the estimate
    // says none are in range, and the read finds more than a top 10 ranks by key (6 x sqrt(10 x 3,020)
    // = 1,043), so the query goes on without the index instead of ranking a cut of the range.
    const unseen = new Map<string, Row>();
    for (const [id, row] of [...makeRows(seededRandom(9))].slice(0, 1_500)) unseen.set(`late-${id}`, { ...row, metadata: { ...row.metadata, batch: 500 } });
    await upsertRows(app, admin, 'shelves', unseen);
    for (const [id, row] of unseen) rows.set(id, row);
    const late = await query(app, admin, 'shelves', { search_mode: 'semantic', embedding, filters: { batch: { $gte: 400 } } });
    t.equal(late.timings.range_index_ms, undefined, 'a range the statistics missed, too wide to rank by key, is not ranked by key');
    t.equal(late.ids.length, TOP_K, 'and is answered all the same');
    t.ok(late.ids.every((id) => rows.get(id)!.metadata.batch === 500), 'from the rows in range');

    const deleted = await app.inject({ method: 'DELETE', url: '/v1/collections/shelves', headers: admin });
    t.equal(deleted.statusCode, 204, deleted.body);
    t.same(await rangeIndexNames(services.sql), [], 'the collection\'s range indexes went with it');
  });

  t.test('tenants: a range ranks only the chunks of the query\'s tenant', async (t) => {
    const { app, admin } = await adminTestApp(t, 'postgresql');
    await createTestCollection(app, admin, { name: 'orgs', dimension: DIMENSION, tenant_field: 'org' });
    const random = seededRandom(11);
    const rows = makeRows(random, ['acme', 'globex', 'initech']);
    await upsertRows(app, admin, 'orgs', rows);
    const embedding = Array.from({ length: DIMENSION }, () => random() * 2 - 1);
    const range = { batch: { $gte: 30, $lt: 36 } };
    await query(app, admin, 'orgs', { search_mode: 'semantic', embedding, filters: { org: 'globex', ...range } });
    await waitForReady(app, admin, 'orgs', 1);
    for (const org of ['acme', 'globex']) {
      const answer = await query(app, admin, 'orgs', { search_mode: 'semantic', embedding, filters: { org, ...range } });
      t.ok(answer.timings.range_index_ms !== undefined, `${org}: through the range index`);
      t.same(answer.ids, exactTop(rows, range, embedding, (row) => row.metadata.org === org), `${org}: the exact top ${TOP_K} of its own chunks`);
    }
  });

  t.test('METADATA_RANGE_INDEXES limits the indexes a collection gets; 0 makes none', async (t) => {
    const { app, services, admin } = await adminTestApp(t, 'postgresql', { metadataRangeIndexesPerCollection: 1 });
    await createTestCollection(app, admin, { name: 'one', dimension: DIMENSION });
    const random = seededRandom(3);
    await upsertRows(app, admin, 'one', makeRows(random));
    const embedding = Array.from({ length: DIMENSION }, () => random() * 2 - 1);
    await query(app, admin, 'one', { search_mode: 'semantic', embedding, filters: { batch: { $lt: 2 } } });
    await waitForReady(app, admin, 'one', 1);
    await query(app, admin, 'one', { search_mode: 'semantic', embedding, filters: { sku: { $lt: 'sku-00100' } } });
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.same((await rangeIndexes(app, admin, 'one')).map((state) => state.field), ['batch'], 'the second field gets none');
    t.equal((await rangeIndexNames(services.sql)).length, 1, 'one index in the database');
    const truncated = await app.inject({ method: 'POST', url: '/v1/collections/one/truncate', headers: admin });
    t.equal(truncated.statusCode, 200, truncated.body);
    t.same(await rangeIndexNames(services.sql), [], 'a truncation drops them; the next range query asks again');

    const off = await adminTestApp(t, 'postgresql', { metadataRangeIndexesPerCollection: 0 });
    await createTestCollection(off.app, off.admin, { name: 'none', dimension: DIMENSION });
    await upsertRows(off.app, off.admin, 'none', makeRows(seededRandom(3)));
    const answer = await query(off.app, off.admin, 'none', { search_mode: 'semantic', embedding, filters: { batch: { $lt: 2 } } });
    t.equal(answer.ids.length, TOP_K, 'queries are answered');
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.same(await rangeIndexes(off.app, off.admin, 'none'), [], 'and no index is made');
    t.same(await rangeIndexNames(off.services.sql), [], 'none in the database');
  });
}
