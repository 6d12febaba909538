/**
 * Semantic queries with equality and range filters through the API on a collection above the
 * embedded store's exact-search threshold: the index of metadata values (metadata-value-index.ts)
 * answers them from the rows holding the filter's values, exactly and without asking the graph, also
 * after rows are replaced with other metadata and removed. Embedded store only (PostgreSQL runs pgvector, whose
 * index is migration 0018's).
 */
import t from 'tap';
import type { EmbeddedVectorStore } from '../../plugins/vector-store/embedded/index.js';
import { defaultSearchThresholds } from '../../plugins/vector-store/embedded/filtered-search.js';
import { graphThreadOf, recordGraphRequests } from '../support/graph-thread-control.js';
import { cosineSimilarity as cosine } from '../support/cargo-vectors.js';
import { seededRandom } from '../support/seeded-random.js';
import { adminTestApp, createTestCollection } from '../support/test-app.js';

const DIMENSION = 8;
const COUNT = defaultSearchThresholds.exactSearchBelow + 1_000;
/** With 6,000 rows, up to 2.5 x sqrt(20 x 6,000) = 866 candidates are answered from the index. */
const TOP_K = 20;

interface Row {
  embedding: number[];
  metadata: Record<string, unknown>;
}

t.test('equality and range filters are answered from the rows holding their values, through writes', async (t) => {
  const { app, services, admin } = await adminTestApp(t, 'pglite');
  await createTestCollection(app, admin, { name: 'shelves', dimension: DIMENSION });
  const random = seededRandom(20_261_129);
  const randomVector = () => Array.from({ length: DIMENSION }, () => random() * 2 - 1);
  // kind: about 5 % of rows each, at random (evenly spaced samples see every value); batch: 50 rows
  // each; tags: an array, one of 37 values; a nested field; sku: one a row.
  const rows = new Map<string, Row>();
  for (let n = 0; n < COUNT; n++) {
    rows.set(`r${n}`, { embedding: randomVector(), metadata: { kind: Math.floor(random() * 20), batch: Math.floor(n / 50), tags: [`t${n % 37}`, 'all'], shelf: { aisle: `a${n % 4}` }, sku: `sku-${String(n).padStart(5, '0')}` } });
  }
  const upsert = async (ids: string[]) => {
    const vectors = ids.map((id) => ({ id, text: `item ${id}`, embedding: rows.get(id)!.embedding, metadata: rows.get(id)!.metadata }));
    const response = await app.inject({ method: 'POST', url: '/v1/collections/shelves/vectors/upsert', headers: admin, payload: { vectors } });
    t.equal(response.statusCode, 200, response.body);
  };
  const ids = [...rows.keys()];
  for (let start = 0; start < COUNT; start += 3_000) await upsert(ids.slice(start, start + 3_000));

  const requests = recordGraphRequests(graphThreadOf(services.indexes.vectorStore as EmbeddedVectorStore));
  const graphSearches = () => requests.filter((op) => op === 'search').length;

  /** The query's exact top 20 among the rows passing `passes`, against what the service answers. */
  const checkExact = async (label: string, filters: unknown, passes: (metadata: Record<string, any>) => boolean, embedding = randomVector()) => {
    const expected = [...rows].filter(([, row]) => passes(row.metadata))
      .map(([id, row]) => ({ id, score: cosine(embedding, row.embedding) }))
      .sort((left, right) => right.score - left.score)
      .slice(0, TOP_K);
    const before = graphSearches();
    const response = await app.inject({
      method: 'POST', url: '/v1/collections/shelves/query', headers: admin,
      payload: { query: 'shelf', embedding, search_mode: 'semantic', top_k: TOP_K, skip_cache: true, filters },
    });
    t.equal(response.statusCode, 200, response.body);
    const results = response.json().results as Array<{ id: string; score: number }>;
    t.same(results.map((result) => result.id), expected.map((hit) => hit.id), `${label}: the exact top ${TOP_K}`);
    t.equal(graphSearches() - before, 0, `${label}: answered without the graph`);
    return results;
  };

  // Each of these lets 3 % of the rows or more pass some part: without the index the store would
  // search the graph and post-filter.
  await checkExact('{kind: 3}', { kind: 3 }, (metadata) => metadata.kind === 3);
  await checkExact('$in', { kind: { $in: [1, 8] } }, (metadata) => metadata.kind === 1 || metadata.kind === 8);
  await checkExact('an array element', { tags: 't5' }, (metadata) => metadata.tags.includes('t5'));
  await checkExact('a nested field', { 'shelf.aisle': 'a2', kind: 4 }, (metadata) => metadata.shelf.aisle === 'a2' && metadata.kind === 4);
  await checkExact('$and with a range', { $and: [{ kind: 6 }, { batch: { $gte: 60 } }] }, (metadata) => metadata.kind === 6 && metadata.batch >= 60);
  await checkExact('$or of equalities', { $or: [{ batch: 3 }, { kind: 2 }] }, (metadata) => metadata.batch === 3 || metadata.kind === 2);
  await checkExact('a range', { batch: { $gte: 60, $lt: 64 } }, (metadata) => metadata.batch >= 60 && metadata.batch < 64);
  await checkExact('a range of strings', { sku: { $gte: 'sku-00100', $lt: 'sku-00400' } }, (metadata) => metadata.sku >= 'sku-00100' && metadata.sku < 'sku-00400');
  await checkExact('a value no row holds', { kind: 99 }, () => false);
  await checkExact('1 and "1" differ', { kind: '3' }, () => false);

  // Rows change their values, move between values, and go; the index follows every write.
  const changed = ids.filter((id) => rows.get(id)!.metadata.kind === 3).slice(0, 40);
  const target = randomVector();
  for (const [index, id] of changed.entries()) {
    const row = rows.get(id)!;
    // Half leave kind 3 for kind 5 and come close to the query; half keep kind 3 and lose their tag.
    rows.set(id, index % 2 === 0
      ? { embedding: target.map((value) => value + (random() - 0.5) * 0.01), metadata: { ...row.metadata, kind: 5 } }
      : { embedding: row.embedding, metadata: { ...row.metadata, tags: ['all'] } });
  }
  await upsert(changed);
  // Rows that always held kind 5, and some that just took it.
  const removed = [...ids.filter((id) => rows.get(id)!.metadata.kind === 5 && !changed.includes(id)).slice(0, 30), changed[0]!, changed[2]!];
  const deleted = await app.inject({ method: 'POST', url: '/v1/collections/shelves/vectors/delete', headers: admin, payload: { ids: removed } });
  t.equal(deleted.statusCode, 200, deleted.body);
  for (const id of removed) rows.delete(id);

  const nowFive = await checkExact('{kind: 5} after writes', { kind: 5 }, (metadata) => metadata.kind === 5, target);
  t.ok(nowFive.slice(0, 18).every((result) => changed.includes(result.id) && !removed.includes(result.id)), 'the 18 rows that took kind 5 and stayed are found first, those removed are not');
  await checkExact('{kind: 3} after writes', { kind: 3 }, (metadata) => metadata.kind === 3, target);
  await checkExact('a range after writes', { batch: { $lte: 3 } }, (metadata) => metadata.batch <= 3, target);
  await checkExact('an array element after writes', { tags: 't5' }, (metadata) => metadata.tags.includes('t5'), target);
});
