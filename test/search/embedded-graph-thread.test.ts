import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CollectionVectors, defaultAnnSettings, type StoredVector } from '../../plugins/vector-store/embedded/collection-vectors.js';
import { defaultSearchThresholds, searchCollectionVectors } from '../../plugins/vector-store/embedded/filtered-search.js';
import { GraphSnapshots } from '../../plugins/vector-store/embedded/graph-snapshots.js';
import { GraphThread, maxRowsInFlight } from '../../plugins/vector-store/embedded/graph-thread.js';
import { holdInsertAnswers, killGraphThread, recordGraphRequests, recordInsertRowsInFlight } from '../support/graph-thread-control.js';

const dimension = 8;
/** Above exactSearchBelow, so unrestricted searches go to the graph. */
const rowCount = defaultSearchThresholds.exactSearchBelow + 500;

function rowVector(row: number): Float32Array {
  return Float32Array.from({ length: dimension }, (_, index) => Math.sin(row * (index + 1) * 0.37) + (index === row % dimension ? 2 : 0));
}

/** Rows `first` to `first + count - 1`, each keyed by its row number. */
function rows(first: number, count: number): StoredVector[] {
  return Array.from({ length: count }, (_, offset) => ({ key: first + offset, embedding: rowVector(first + offset), metadata: {}, tenant: null }));
}

async function filledCollection(graphs: GraphThread): Promise<CollectionVectors> {
  const vectors = new CollectionVectors(dimension, graphs);
  for (let start = 0; start < rowCount; start += 1000) vectors.upsert(rows(start, Math.min(1000, rowCount - start)));
  return vectors;
}

/** The defaults, except that however many rows await the graph, an unfiltered search still asks it. */
const graphWhileBehind = { ...defaultSearchThresholds, exactScanAwaitingShare: Number.POSITIVE_INFINITY };

const query = { unitQuery: rowVector(42).map((value, _, row) => value / Math.hypot(...row)), topK: 5, tenant: null, filter: null };

/**
 * One graph insert request that keeps the graph thread busy for a while (8-dim rows cost 10-16 µs
 * each: 0.2-0.3 s), as a 4,096-chunk ingestion slice does with 384-dim rows.
 */
const largeInsertRows = 20_000;

/** Rows of the reachability test: with parallel inserts, 1-3 of them were out of reach in each of five runs. */
const reachabilityRows = 10_000;

/** `promise`, noting `label` in `order` when it settles: the order answers came in, not how long they took. */
function noted<T>(order: string[], label: string, promise: Promise<T>): Promise<T> {
  return promise.finally(() => order.push(label));
}

t.test('a search sees every write posted before it, without waiting for the writes', async (t) => {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = await filledCollection(graphs);
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.equal(hits[0]!.key, 42, 'the row just written is its own nearest neighbour');
  vectors.remove([42]);
  const afterRemoval = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.notOk(afterRemoval.some((hit) => hit.key === 42), 'a removal posted before the search is applied before it');
  await vectors.graphCurrent();
  t.ok(vectors.graphUsable, 'the answers came from the graph, not from the exact fallback');
});

/**
 * Row `row` of a fixture without near-duplicates (rowVector's sines repeat every 2,768 rows):
 * eight values from a hash of the row, uniform in [-1, 1).
 */
function hashedRowVector(row: number): Float32Array {
  let state = Math.imul(row + 1, 0x9e3779b1) >>> 0;
  return Float32Array.from({ length: dimension }, () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), state | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 2 ** 31 - 1;
  });
}

t.test('every row the graph thread inserted is found by a search for its own vector', async (t) => {
  // usearch's parallel inserts left a few rows in every ten thousand linked from no other row
  // (unum-cloud/USearch#735): stored, yet never returned by a graph search, however wide.
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = new CollectionVectors(dimension, graphs);
  for (let start = 0; start < reachabilityRows; start += 1000) {
    vectors.upsert(Array.from({ length: 1000 }, (_, offset) => ({ key: start + offset, embedding: hashedRowVector(start + offset), metadata: {}, tenant: null })));
  }
  await vectors.graphCurrent();
  const requests = recordGraphRequests(graphs);
  const notFound: number[] = [];
  for (let row = 0; row < reachabilityRows; row++) {
    const vector = hashedRowVector(row);
    const length = Math.hypot(...vector);
    const hits = await searchCollectionVectors(vectors, { ...query, unitQuery: vector.map((value) => value / length), topK: 1 }, defaultSearchThresholds);
    if (hits[0]?.key !== row) notFound.push(row);
  }
  t.same(notFound, [], 'no row is missing from its own search');
  t.equal(requests.filter((request) => request === 'search').length, reachabilityRows, 'every answer came from the graph');
  t.ok(vectors.graphUsable);
});

t.test('a search is answered while the graph thread is still inserting a large batch of another collection', async (t) => {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const queried = await filledCollection(graphs);
  await queried.graphCurrent();
  const written = new CollectionVectors(dimension, graphs);
  written.upsert(rows(0, largeInsertRows));
  const requests = recordGraphRequests(graphs);
  const order: string[] = [];
  const inserted = noted(order, 'insert applied', written.graphCurrent());
  const hits = await noted(order, 'search answered', searchCollectionVectors(queried, query, defaultSearchThresholds));
  await inserted;
  t.same(order, ['search answered', 'insert applied'], 'the search did not wait for the insert sent before it');
  t.same(requests, ['sync', 'search'], 'the answer came from the graph');
  t.equal(hits[0]!.key, 42);
});

t.test('a search does not wait for its own collection\'s graph writes either, and sees every one of them', async (t) => {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = await filledCollection(graphs);
  await vectors.graphCurrent();
  // The graph thread applies the writes below only after this insert.
  vectors.upsert(rows(rowCount, largeInsertRows));
  const copyOf42 = rowCount + largeInsertRows;
  vectors.upsert([{ key: copyOf42, embedding: rowVector(42), metadata: {}, tenant: null }]);
  vectors.upsert([{ key: 7, embedding: rowVector(42), metadata: {}, tenant: null }]);
  vectors.remove([42, ...Array.from({ length: 3000 }, (_, offset) => 1000 + offset)]);
  const requests = recordGraphRequests(graphs);
  const order: string[] = [];
  const applied = noted(order, 'writes applied', vectors.graphCurrent());
  const hits = await noted(order, 'search answered', searchCollectionVectors(vectors, query, graphWhileBehind));
  const largeRow = rowCount + 12_345;
  const unitLargeRow = rowVector(largeRow).map((value, _, row) => value / Math.hypot(...row));
  const largeRowHits = await noted(order, 'search answered', searchCollectionVectors(vectors, { ...query, unitQuery: unitLargeRow }, graphWhileBehind));
  await applied;
  t.same(order, ['search answered', 'search answered', 'writes applied'], 'both searches were answered before the graph had applied the writes');
  t.same(requests, ['sync', 'search', 'search'], 'both answers came from the graph');
  t.same(hits.slice(0, 2).map((hit) => hit.key), [7, copyOf42], 'a new row and a replaced row are found with the vectors they have now');
  t.ok(hits.slice(0, 2).every((hit) => Math.abs(hit.score - 1) < 1e-6), 'scored with their new vectors');
  t.notOk(hits.some((hit) => hit.key === 42), 'a removed row is not returned, though the graph still held it');
  t.same(hits, vectors.exactSearch(query.unitQuery, query.topK, undefined), 'the exact answer');
  t.equal(largeRowHits[0]!.key, largeRow, 'a row of the insert the graph was still applying is found');
  t.ok(vectors.graphUsable, 'every write was applied to the graph without failing');
  t.same(await searchCollectionVectors(vectors, query, graphWhileBehind), hits, 'the graph that applied them answers the same');
});

t.test('a graph saved while inserts are still pending holds them: a save waits for the writes sent before it', async (t) => {
  const graphs = new GraphThread();
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-graph-snapshot-'));
  t.teardown(async () => {
    await graphs.close();
    await rm(directory, { recursive: true, force: true });
  });
  const vectors = await filledCollection(graphs);
  vectors.upsert(rows(rowCount, largeInsertRows));
  const snapshots = new GraphSnapshots(directory);
  const collectionId = randomUUID();
  await snapshots.save(collectionId, vectors, defaultAnnSettings);
  // As at the next start: the same rows placed without a graph, then the saved graph loaded.
  const restarted = new CollectionVectors(dimension, graphs);
  restarted.upsert(rows(0, rowCount + largeInsertRows), { graph: false });
  const snapshot = await snapshots.take(collectionId);
  t.ok(snapshot && await snapshot.matches(restarted, defaultAnnSettings), 'the snapshot was made from exactly these rows');
  t.ok(await restarted.loadGraph(snapshot!.graphFile), 'its graph holds every row, those of the insert pending at the save included');
});

t.test('a graph built at a start takes inserts afterwards and answers from them', async (t) => {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = new CollectionVectors(dimension, graphs);
  vectors.upsert(rows(0, rowCount), { graph: false });
  vectors.addAllToGraph(1000);
  // Fewer rows than the graph has room for: an insert on more threads than it was grown for would fail.
  const copyOf42 = rowCount + 2000;
  vectors.upsert(rows(rowCount, 2000));
  vectors.upsert([{ key: copyOf42, embedding: rowVector(42), metadata: {}, tenant: null }]);
  await vectors.graphCurrent();
  t.ok(vectors.graphUsable, 'every insert succeeded');
  const requests = recordGraphRequests(graphs);
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(hits.slice(0, 2).map((hit) => hit.key), [42, copyOf42], 'rows from before and after the start are found');
  t.same(requests, ['search'], 'by the graph');
});

t.test('a graph thread that is gone costs speed, not answers: searches scan exactly', async (t) => {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = await filledCollection(graphs);
  await vectors.graphCurrent();
  t.ok(vectors.graphUsable, 'usable while its thread runs');
  await graphs.close();
  vectors.upsert([{ key: rowCount, embedding: rowVector(42), metadata: {}, tenant: null }]);
  // Refused, as every request after close(): no new thread is started for it.
  await t.rejects(vectors.graphCurrent(), /closed/);
  t.notOk(vectors.graphUsable, 'the write after the thread went failed, and that is remembered');
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(hits, vectors.exactSearch(query.unitQuery, query.topK, undefined), 'the exact answers');
  t.same(hits.slice(0, 2).map((hit) => hit.key).sort((a, b) => a - b), [42, rowCount], 'the row written after the thread went is found too');
});

/** A full collection whose graph holds every row, on a thread closed at the test's end. */
async function collectionWithCurrentGraph(t: { teardown(fn: () => Promise<void>): void }) {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = await filledCollection(graphs);
  await vectors.graphCurrent();
  return { graphs, vectors };
}

/** A full collection whose graph is complete, and then its thread dies. */
async function collectionOfDeadThread(t: { teardown(fn: () => Promise<void>): void }) {
  const { graphs, vectors } = await collectionWithCurrentGraph(t);
  await killGraphThread(graphs);
  return { graphs, vectors };
}

t.test('a graph thread that died is replaced: collections made afterwards get a working graph', async (t) => {
  const { graphs, vectors: before } = await collectionOfDeadThread(t);
  before.upsert([{ key: rowCount, embedding: rowVector(7), metadata: {}, tenant: null }]);
  await before.graphCurrent().catch(() => undefined);
  t.notOk(before.graphUsable, 'the collection whose graph died scans exactly');
  const after = await filledCollection(graphs);
  await after.graphCurrent();
  t.ok(after.graphUsable, 'the new collection has a graph on a new thread');
  const hits = await searchCollectionVectors(after, query, defaultSearchThresholds);
  t.equal(hits[0]!.key, 42);
});

t.test('a graph is known lost as soon as its thread died: searches scan exactly without asking it', async (t) => {
  const { graphs, vectors } = await collectionOfDeadThread(t);
  t.notOk(vectors.graphUsable, 'lost before any write or search failed');
  const requests = recordGraphRequests(graphs);
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(hits, vectors.exactSearch(query.unitQuery, query.topK, undefined), 'the exact answers, not an error');
  t.same(requests, [], 'the graph thread was not asked');
  await t.rejects(vectors.saveGraph('/nonexistent/graph.usearch'), /lost with the thread/, 'a request about the lost graph is refused, not sent to the new thread');
});

t.test('a graph search that fails answers exactly, and the graph is not asked again', async (t) => {
  const { graphs, vectors } = await collectionWithCurrentGraph(t);
  t.ok(vectors.graphUsable);
  const requests = recordGraphRequests(graphs, { failSearches: true });
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(hits, vectors.exactSearch(query.unitQuery, query.topK, undefined), 'the exact answers, not an error');
  t.notOk(vectors.graphUsable, 'the failed search is remembered');
  t.same(await searchCollectionVectors(vectors, query, defaultSearchThresholds), hits);
  t.same(requests.filter((op) => op === 'search'), ['search'], 'the graph was asked once, not again');
});

const unit = (vector: Float32Array) => vector.map((value, _, row) => value / Math.hypot(...row));

t.test('inserts wait, as keys, while the graph thread is the bound of rows behind; writes and searches do not', async (t) => {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const rowsInFlight = recordInsertRowsInFlight(graphs);
  const collections = [new CollectionVectors(dimension, graphs), new CollectionVectors(dimension, graphs)];
  const count = maxRowsInFlight * 2;
  for (let start = 0; start < count; start += 1000) for (const vectors of collections) vectors.upsert(rows(start, Math.min(1000, count - start)));
  t.ok(rowsInFlight.now <= maxRowsInFlight, `${rowsInFlight.now} rows sent of ${count * 2} written`);
  // Changed while their inserts wait: each must reach the graph as it is now, or not at all.
  const [changed] = collections;
  changed!.upsert([{ key: count - 2, embedding: rowVector(count + 1), metadata: {}, tenant: null }]);
  changed!.remove([count - 1, count - 3]);
  const unitLast = unit(rowVector(count + 1));
  const hits = await searchCollectionVectors(changed!, { ...query, unitQuery: unitLast }, defaultSearchThresholds);
  t.equal(hits[0]!.key, count - 2, 'a row whose insert waits is found with its new vector');

  await Promise.all(collections.map((vectors) => vectors.graphCurrent()));
  t.ok(rowsInFlight.max <= maxRowsInFlight, `at most ${maxRowsInFlight} rows in flight (${rowsInFlight.max})`);
  t.ok(collections.every((vectors) => vectors.graphUsable), 'every insert succeeded');
  const requests = recordGraphRequests(graphs);
  const fromGraph = async (row: number) => (await searchCollectionVectors(changed!, { ...query, unitQuery: unit(rowVector(row)) }, defaultSearchThresholds)).map((hit) => hit.key);
  t.equal((await fromGraph(count + 1))[0], count - 2, 'the graph holds the replaced row\'s new vector');
  t.notOk((await fromGraph(count - 1)).includes(count - 1), 'nor a row removed before its insert was sent');
  t.notOk((await fromGraph(count - 3)).includes(count - 3));
  t.equal((await fromGraph(count - 4))[0], count - 4, 'the rows around them are there');
  t.same(requests, ['search', 'search', 'search', 'search'], 'answered by the graph');
});

/**
 * Keeps the graph thread busy for a while with another collection's large insert: the graph writes
 * sent after it are applied only once it is done. Settles then.
 */
function busyGraphThread(graphs: GraphThread): Promise<void> {
  const other = new CollectionVectors(dimension, graphs);
  other.upsert(rows(0, largeInsertRows));
  return other.graphCurrent();
}

t.test('while many rows await the graph, an unfiltered search scans exactly; with few, it asks the graph', async (t) => {
  const { graphs, vectors } = await collectionWithCurrentGraph(t);
  const answers = holdInsertAnswers(graphs);
  const shareRows = Math.ceil(vectors.size * defaultSearchThresholds.exactScanAwaitingShare);
  // Just under the share: the graph answers, beside the awaiting rows.
  vectors.upsert(rows(rowCount, shareRows - 2));
  const requests = recordGraphRequests(graphs);
  const below = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(requests, ['search'], `${vectors.rowsAwaitingGraph} of ${vectors.size} rows awaiting: the graph was asked`);
  t.equal(below[0]!.key, 42);
  // A copy of row 42 written now, and the share reached.
  vectors.upsert([{ key: 0, embedding: rowVector(42), metadata: {}, tenant: null }, ...rows(rowCount + shareRows, 100)]);
  t.ok(vectors.rowsAwaitingGraph >= vectors.size * defaultSearchThresholds.exactScanAwaitingShare, `${vectors.rowsAwaitingGraph} of ${vectors.size} rows awaiting`);
  requests.length = 0;
  const above = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(requests, [], 'the graph was not asked');
  t.same(above, vectors.exactSearch(query.unitQuery, query.topK, undefined), 'the exact answer');
  t.same(above.slice(0, 2).map((hit) => hit.key).sort((a, b) => a - b), [0, 42], 'the row written last is found');
  answers.release();
  await vectors.graphCurrent();
  t.equal(vectors.rowsAwaitingGraph, 0, 'none awaits once the graph answered');
  requests.length = 0;
  t.equal((await searchCollectionVectors(vectors, query, defaultSearchThresholds))[0]!.score, above[0]!.score);
  t.same(requests, ['search'], 'then the graph answers again');
});

t.test('a restricted search finds the best allowed row awaiting the graph, however many others await it', async (t) => {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = new CollectionVectors(dimension, graphs);
  const tenantRows = (tenant: string, first: number, count: number) => rows(first, count).map((row) => ({ ...row, tenant }));
  for (let start = 0; start < rowCount; start += 1000) vectors.upsert(tenantRows('a', start, Math.min(1000, rowCount - start)));
  await vectors.graphCurrent();
  // The graph does not hold the rows below when it searches: it would find the copies itself.
  const busy = busyGraphThread(graphs);
  // 200 copies of the query's row in another tenant, then one in tenant a: all score 1, and equal
  // scores rank by key, so among every awaiting row the 200 come first.
  vectors.upsert(Array.from({ length: 200 }, (_, n) => ({ key: rowCount + n, embedding: rowVector(42), metadata: {}, tenant: 'b' })));
  const allowedKey = rowCount + 200;
  vectors.upsert([{ key: allowedKey, embedding: rowVector(42), metadata: {}, tenant: 'a' }]);
  vectors.remove([42]);
  const requests = recordGraphRequests(graphs);
  // The tenant's rows go to the graph rather than to an exact scan of them.
  const hits = await searchCollectionVectors(vectors, { ...query, tenant: 'a' }, { ...graphWhileBehind, exactTenantScanMaxRows: 0 });
  t.same(requests, ['search'], 'the graph was asked');
  t.equal(hits[0]!.key, allowedKey, 'the awaiting row of the tenant is first');
  t.same(hits, vectors.exactSearch(query.unitQuery, query.topK, 'a'), 'the exact answer within the tenant');
  t.ok(hits.every((hit) => vectors.tenantOf(hit.key) === 'a'), 'no other tenant\'s row');
  await busy;
  await vectors.graphCurrent();
});

t.test('a search while a few rows await the graph, most of them removed since: the best row held is found', async (t) => {
  const { graphs, vectors } = await collectionWithCurrentGraph(t);
  // The graph does not take in the rows below before it searches: it would answer with the removed copies.
  const busy = busyGraphThread(graphs);
  // topK + 1 copies of the query's row, all but the last removed again: equal scores rank by key,
  // so the removed ones would fill the top if they still counted.
  const copies = Array.from({ length: query.topK + 1 }, (_, n) => ({ key: rowCount + n, embedding: rowVector(42), metadata: {}, tenant: null }));
  vectors.upsert(copies);
  const heldKey = rowCount + query.topK;
  vectors.remove([...copies.slice(0, -1).map((row) => row.key), 42]);
  const requests = recordGraphRequests(graphs);
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(requests, ['search'], `the graph was asked (${vectors.rowsAwaitingGraph} rows awaiting it)`);
  t.equal(hits[0]!.key, heldKey, 'the awaiting row still held is first');
  t.notOk(hits.some((hit) => hit.key < heldKey && hit.key >= rowCount), 'no removed row');
  t.same(hits, vectors.exactSearch(query.unitQuery, query.topK, undefined), 'the exact answer');
  await busy;
  await vectors.graphCurrent();
});
