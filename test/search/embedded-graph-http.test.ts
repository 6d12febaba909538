/**
 * Semantic queries through the API on a collection above the embedded store's exact-search
 * threshold: scanned exactly while the graph has not taken in the rows, then answered by the HNSW
 * graph on its thread; and after that thread dies, the same queries still answer, exactly,
 * including vectors written after it died. A tenant's query, above the size scanned exactly, is
 * scanned exactly too while its rows await the graph. Embedded store only (PostgreSQL runs pgvector).
 */
import t from 'tap';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';
import type { EmbeddedVectorStore } from '../../plugins/vector-store/embedded/index.js';
import { defaultSearchThresholds } from '../../plugins/vector-store/embedded/filtered-search.js';
import { graphThreadOf, graphWritesApplied, holdInsertAnswers, killGraphThread, recordGraphRequests } from '../support/graph-thread-control.js';
import { cargoText as textOf, cosineSimilarity as cosine } from '../support/cargo-vectors.js';
import { adminTestApp, createTestCollection } from '../support/test-app.js';

const DIMENSION = 8;
const COUNT = defaultSearchThresholds.exactSearchBelow + 1_000;
const QUERIES = ['harbour crane 7', 'berth 12 manifest', 'cargo 4400 crane 3', 'tide at berth 60'];

t.test('semantic queries above the exact-search threshold, with the graph thread alive and after it died', async (t) => {
  const { app, services, admin } = await adminTestApp(t, 'pglite');
  await createTestCollection(app, admin, { name: 'manifests', dimension: DIMENSION });
  const model = localEmbeddingPlugin.create({ dimension: DIMENSION }, {});
  const embeddings = new Map<string, number[]>();
  const texts = Array.from({ length: COUNT }, (_, n) => textOf(n));
  const vectors = (await model.embed(texts, 'document')).vectors.map((vector) => Array.from(vector));
  texts.forEach((_, n) => embeddings.set(`m${n}`, vectors[n]!));

  const store = services.indexes.vectorStore as EmbeddedVectorStore;
  const graphs = graphThreadOf(store);
  // As from a graph thread busy with a large load: the inserts are applied, their answers held.
  const insertAnswers = holdInsertAnswers(graphs);
  t.teardown(() => insertAnswers.release());
  const upsert = async (items: Array<{ id: string; embedding: number[]; text: string }>) => {
    const response = await app.inject({ method: 'POST', url: '/v1/collections/manifests/vectors/upsert', headers: admin, payload: { vectors: items } });
    t.equal(response.statusCode, 200, response.body);
  };
  for (let start = 0; start < COUNT; start += 3_000) {
    await upsert(texts.slice(start, start + 3_000).map((text, offset) => ({ id: `m${start + offset}`, embedding: vectors[start + offset]!, text })));
  }

  const queryVectorOf = async (query: string) => Array.from((await model.embed([query], 'query')).vectors[0]!);
  /** Cosine scores of the exact top 10, best first. */
  const exactTopScores = async (query: string) => {
    const queryVector = await queryVectorOf(query);
    return [...embeddings.values()].map((embedding) => cosine(queryVector, embedding)).sort((a, b) => b - a).slice(0, 10);
  };
  /** Cosine of each result, recomputed here from its id, so a wrong id cannot pass on a right score. */
  const servedScores = async (query: string) => {
    const response = await app.inject({ method: 'POST', url: '/v1/collections/manifests/query', headers: admin, payload: { query, search_mode: 'semantic', top_k: 10, skip_cache: true } });
    t.equal(response.statusCode, 200, response.body);
    const queryVector = await queryVectorOf(query);
    const results = response.json().results as Array<{ id: string }>;
    return { ids: results.map((result) => result.id), scores: results.map((result) => cosine(queryVector, embeddings.get(result.id)!)) };
  };

  const requests = recordGraphRequests(graphs);
  const graphSearches = () => requests.filter((op) => op === 'search').length;

  // Every row awaits the graph: each query scans exactly instead.
  for (const query of QUERIES.slice(0, 2)) {
    const expected = await exactTopScores(query);
    const { scores } = await servedScores(query);
    t.ok(scores.every((score, rank) => Math.abs(score - expected[rank]!) < 1e-5), `${query}: the exact top 10 while the graph is behind`);
  }
  t.equal(graphSearches(), 0, 'the graph was not asked while every row awaited it');

  insertAnswers.release();
  await graphWritesApplied(graphs);
  let found = 0;
  for (const query of QUERIES) {
    const expected = await exactTopScores(query);
    const { scores } = await servedScores(query);
    t.equal(scores.length, 10, `${query}: ten results`);
    t.ok(Math.abs(scores[0]! - expected[0]!) < 1e-5, `${query}: the best result is an exact nearest neighbour`);
    found += scores.filter((score) => score >= expected[9]! - 1e-5).length;
  }
  t.equal(graphSearches(), QUERIES.length, 'each query searched the graph');
  t.ok(found / (QUERIES.length * 10) >= 0.9, `recall@10 from the graph: ${found / (QUERIES.length * 10)}`);

  // The thread dies (as on a crash in usearch) while the service keeps running.
  await killGraphThread(graphs);
  const lateVector = await queryVectorOf(QUERIES[0]!);
  await upsert([{ id: 'late', embedding: lateVector, text: QUERIES[0]! }]);
  embeddings.set('late', lateVector);

  requests.length = 0;
  for (const query of QUERIES) {
    const expected = await exactTopScores(query);
    const { scores } = await servedScores(query);
    t.equal(scores.length, 10);
    t.ok(scores.every((score, rank) => Math.abs(score - expected[rank]!) < 1e-5), `${query}: the exact top 10`);
  }
  // The graph is known lost the moment its thread died, so it is not asked at all.
  t.ok(graphSearches() === 0, `the dead graph is not asked (asked ${graphSearches()} times)`);
  t.equal((await servedScores(QUERIES[0]!)).ids[0], 'late', 'the vector written after the thread died is found');
});

t.test('a tenant above the exact tenant scan is scanned exactly while its rows await the graph, then answered by the graph', async (t) => {
  const { app, services, admin } = await adminTestApp(t, 'pglite');
  await createTestCollection(app, admin, { name: 'berths', dimension: DIMENSION, tenant_field: 'port' });
  const model = localEmbeddingPlugin.create({ dimension: DIMENSION }, {});
  // One tenant above the size scanned exactly anyway, so only the rows awaiting the graph make it exact.
  const harbourRows = defaultSearchThresholds.exactTenantScanMaxRows + 500;
  const texts = Array.from({ length: harbourRows + 300 }, (_, n) => textOf(n));
  const vectors = (await model.embed(texts, 'document')).vectors.map((vector) => Array.from(vector));
  const portOf = (n: number) => (n < harbourRows ? 'harbour' : 'river');

  const graphs = graphThreadOf(services.indexes.vectorStore as EmbeddedVectorStore);
  const insertAnswers = holdInsertAnswers(graphs);
  t.teardown(() => insertAnswers.release());
  for (let start = 0; start < texts.length; start += 3_000) {
    const items = texts.slice(start, start + 3_000).map((text, offset) => {
      const n = start + offset;
      return { id: `b${n}`, embedding: vectors[n]!, text, metadata: { port: portOf(n) } };
    });
    const response = await app.inject({ method: 'POST', url: '/v1/collections/berths/vectors/upsert', headers: admin, payload: { vectors: items } });
    t.equal(response.statusCode, 200, response.body);
  }

  const queryVector = Array.from((await model.embed([QUERIES[2]!], 'query')).vectors[0]!);
  /** Cosine scores of a tenant's exact top 10, best first. */
  const exactTopScores = (port: string) => texts.map((_, n) => n).filter((n) => portOf(n) === port)
    .map((n) => cosine(queryVector, vectors[n]!)).sort((a, b) => b - a).slice(0, 10);
  const isExactTop10 = (found: number[], port: string) => {
    const expected = exactTopScores(port);
    return found.length === 10 && found.every((n, rank) => Math.abs(cosine(queryVector, vectors[n]!) - expected[rank]!) < 1e-5);
  };
  const served = async (port: string) => {
    const response = await app.inject({
      method: 'POST', url: '/v1/collections/berths/query', headers: admin,
      payload: { query: QUERIES[2], search_mode: 'semantic', top_k: 10, skip_cache: true, filters: { port } },
    });
    t.equal(response.statusCode, 200, response.body);
    const results = response.json().results as Array<{ id: string; metadata: { port: string } }>;
    t.ok(results.every((result) => result.metadata.port === port), `only ${port}'s rows`);
    return results.map((result) => Number(result.id.slice(1)));
  };
  const requests = recordGraphRequests(graphs);
  const graphSearches = () => requests.filter((op) => op === 'search').length;

  const harbour = await served('harbour');
  t.ok(isExactTop10(harbour, 'harbour'), 'the exact top 10 of the large tenant');
  t.ok(isExactTop10(await served('river'), 'river'), 'the exact top 10 of the small tenant, scanned exactly as always');
  t.equal(graphSearches(), 0, 'the graph was not asked while the rows awaited it');

  insertAnswers.release();
  await graphWritesApplied(graphs);
  const fromGraph = await served('harbour');
  t.equal(graphSearches(), 1, 'the large tenant is searched in the graph once it holds the rows');
  t.ok(Math.abs(cosine(queryVector, vectors[fromGraph[0]!]!) - exactTopScores('harbour')[0]!) < 1e-5, 'its best result is an exact nearest neighbour');
});
