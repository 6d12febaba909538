import t from 'tap';
import { CollectionVectors } from '../../plugins/vector-store/embedded/collection-vectors.js';
import { defaultSearchThresholds, searchCollectionVectors } from '../../plugins/vector-store/embedded/filtered-search.js';
import { GraphThread } from '../../plugins/vector-store/embedded/graph-thread.js';
import { killGraphThread, recordGraphRequests } from '../support/graph-thread-control.js';

const dimension = 8;
/** Above exactSearchBelow, so unrestricted searches go to the graph. */
const rowCount = defaultSearchThresholds.exactSearchBelow + 500;

function rowVector(row: number): Float32Array {
  return Float32Array.from({ length: dimension }, (_, index) => Math.sin(row * (index + 1) * 0.37) + (index === row % dimension ? 2 : 0));
}

async function filledCollection(graphs: GraphThread): Promise<CollectionVectors> {
  const vectors = new CollectionVectors(dimension, graphs);
  for (let start = 0; start < rowCount; start += 1000) {
    vectors.upsert(Array.from({ length: Math.min(1000, rowCount - start) }, (_, offset) => ({
      key: start + offset, embedding: rowVector(start + offset), metadata: {}, tenant: null,
    })));
  }
  return vectors;
}

const query = { unitQuery: rowVector(42).map((value, _, row) => value / Math.hypot(...row)), topK: 5, tenant: null, filter: null };

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

/** A full collection whose graph is complete, and then its thread dies. */
async function collectionOfDeadThread(t: { teardown(fn: () => Promise<void>): void }) {
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = await filledCollection(graphs);
  await vectors.graphCurrent();
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
  const graphs = new GraphThread();
  t.teardown(() => graphs.close());
  const vectors = await filledCollection(graphs);
  await vectors.graphCurrent();
  t.ok(vectors.graphUsable);
  const requests = recordGraphRequests(graphs, { failSearches: true });
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(hits, vectors.exactSearch(query.unitQuery, query.topK, undefined), 'the exact answers, not an error');
  t.notOk(vectors.graphUsable, 'the failed search is remembered');
  t.same(await searchCollectionVectors(vectors, query, defaultSearchThresholds), hits);
  t.same(requests.filter((op) => op === 'search'), ['search'], 'the graph was asked once, not again');
});
