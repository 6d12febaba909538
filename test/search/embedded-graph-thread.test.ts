import t from 'tap';
import { CollectionVectors } from '../../plugins/vector-store/embedded/collection-vectors.js';
import { defaultSearchThresholds, searchCollectionVectors } from '../../plugins/vector-store/embedded/filtered-search.js';
import { GraphThread } from '../../plugins/vector-store/embedded/graph-thread.js';

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
  t.ok(vectors.graphUsable);
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.equal(hits[0]!.key, 42, 'the row just written is its own nearest neighbour');
  vectors.remove([42]);
  const afterRemoval = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.notOk(afterRemoval.some((hit) => hit.key === 42), 'a removal posted before the search is applied before it');
});

t.test('a graph thread that is gone costs speed, not answers: searches scan exactly', async (t) => {
  const graphs = new GraphThread();
  const vectors = await filledCollection(graphs);
  await graphs.close();
  vectors.upsert([{ key: rowCount, embedding: rowVector(42), metadata: {}, tenant: null }]);
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(vectors.graphUsable, 'the failed write is remembered');
  const hits = await searchCollectionVectors(vectors, query, defaultSearchThresholds);
  t.same(hits, vectors.exactSearch(query.unitQuery, query.topK, undefined), 'the exact answers');
  t.same(hits.slice(0, 2).map((hit) => hit.key).sort((a, b) => a - b), [42, rowCount], 'the row written after the thread went is found too');
});
