/**
 * Semantic queries through the API on a collection above the embedded store's exact-search
 * threshold, so they are answered by the HNSW graph on its thread; and after that thread dies, the
 * same queries still answer, exactly, including vectors written after it died. Embedded store only
 * (PostgreSQL runs pgvector).
 */
import t from 'tap';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';
import type { EmbeddedVectorStore } from '../../plugins/vector-store/embedded/index.js';
import { defaultSearchThresholds } from '../../plugins/vector-store/embedded/filtered-search.js';
import { adminTestApp, createTestCollection } from '../support/test-app.js';

const DIMENSION = 8;
const COUNT = defaultSearchThresholds.exactSearchBelow + 1_000;
const QUERIES = ['harbour crane 7', 'berth 12 manifest', 'cargo 4400 crane 3', 'tide at berth 60'];

const textOf = (n: number) => `cargo ${n} manifest berth ${n % 97} crane ${n % 13}`;

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < a.length; index++) {
    dot += a[index]! * b[index]!;
    normA += a[index]! ** 2;
    normB += b[index]! ** 2;
  }
  return dot / Math.sqrt(normA * normB);
}

t.test('semantic queries above the exact-search threshold, with the graph thread alive and after it died', async (t) => {
  const { app, services, admin } = await adminTestApp(t, 'pglite');
  await createTestCollection(app, admin, { name: 'manifests', dimension: DIMENSION });
  const model = localEmbeddingPlugin.create({ dimension: DIMENSION }, {});
  const embeddings = new Map<string, number[]>();
  const texts = Array.from({ length: COUNT }, (_, n) => textOf(n));
  const { vectors } = await model.embed(texts, 'document');
  texts.forEach((_, n) => embeddings.set(`m${n}`, vectors[n]!));

  const upsert = async (items: Array<{ id: string; embedding: number[]; text: string }>) => {
    const response = await app.inject({ method: 'POST', url: '/v1/collections/manifests/vectors/upsert', headers: admin, payload: { vectors: items } });
    t.equal(response.statusCode, 200, response.body);
  };
  for (let start = 0; start < COUNT; start += 3_000) {
    await upsert(texts.slice(start, start + 3_000).map((text, offset) => ({ id: `m${start + offset}`, embedding: vectors[start + offset]!, text })));
  }

  /** Top 10 by exact cosine; ties are the caller's problem, so it compares scores, not only ids. */
  const exactTop = async (query: string) => {
    const queryVector = (await model.embed([query], 'query')).vectors[0]!;
    return [...embeddings].map(([id, embedding]) => ({ id, score: cosine(queryVector, embedding) }))
      .sort((a, b) => b.score - a.score).slice(0, 10);
  };
  const served = async (query: string) => {
    const response = await app.inject({ method: 'POST', url: '/v1/collections/manifests/query', headers: admin, payload: { query, search_mode: 'semantic', top_k: 10, skip_cache: true } });
    t.equal(response.statusCode, 200, response.body);
    return (response.json().results as Array<{ id: string; score: number }>);
  };

  let found = 0;
  for (const query of QUERIES) {
    const expected = await exactTop(query);
    const results = await served(query);
    t.equal(results.length, 10, `${query}: ten results`);
    t.ok(Math.abs(results[0]!.score - expected[0]!.score) < 1e-5, `${query}: the best result scores as the exact nearest neighbour`);
    const cutoff = expected[9]!.score - 1e-5;
    found += results.filter((result) => result.score >= cutoff && embeddings.has(result.id)).length;
  }
  t.ok(found / (QUERIES.length * 10) >= 0.9, `recall@10 from the graph: ${found / (QUERIES.length * 10)}`);

  const store = services.indexes.vectorStore as EmbeddedVectorStore;
  const collectionVectors = await (store as unknown as { collections: Map<string, Promise<{ graphUsable: boolean; graphCurrent(): Promise<void> }>> }).collections.values().next().value!;
  t.ok(collectionVectors.graphUsable, 'the answers above came from the graph');

  // The thread dies (as on a crash in usearch) while the service keeps running.
  await (store as unknown as { graphs: { requests: { worker: { terminate(): Promise<number> } } } }).graphs.requests.worker.terminate();
  const lateVector = (await model.embed([QUERIES[0]!], 'query')).vectors[0]!;
  await upsert([{ id: 'late', embedding: lateVector, text: QUERIES[0]! }]);
  embeddings.set('late', lateVector);
  await collectionVectors.graphCurrent().catch(() => undefined);
  t.notOk(collectionVectors.graphUsable, 'the write after the thread died could not reach the graph');

  for (const query of QUERIES) {
    const expected = await exactTop(query);
    const results = await served(query);
    t.same(results.map((result) => Number(result.score.toFixed(5))), expected.map((hit) => Number(hit.score.toFixed(5))), `${query}: the exact top 10`);
  }
  const late = await served(QUERIES[0]!);
  t.equal(late[0]!.id, 'late', 'the vector written after the thread died is found');
});
