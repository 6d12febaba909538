/**
 * Raw vectors written through the API while the graph thread is far behind: at most the bound of
 * rows is sent to it, the writes still succeed at once, queries meanwhile find the rows the graph
 * does not hold yet, and deletions of rows across the store's row segments apply. Embedded store
 * only (PostgreSQL runs pgvector).
 */
import t from 'tap';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';
import { maxRowsInFlight } from '../../plugins/vector-store/embedded/graph-thread.js';
import { defaultRowsPerSegment } from '../../plugins/vector-store/embedded/row-block.js';
import { graphThreadOf, holdInsertAnswers, recordInsertRowsInFlight } from '../support/graph-thread-control.js';
import { cargoText as textOf, cosineSimilarity as cosine } from '../support/cargo-vectors.js';
import { adminTestApp, createTestCollection } from '../support/test-app.js';

const DIMENSION = 8;
/** More than the bound: some inserts must wait. */
const COUNT = maxRowsInFlight + 3_000;
const PER_REQUEST = 5_000;

t.test('vectors written while the graph thread is behind: bounded rows in flight, correct answers meanwhile', async (t) => {
  const { app, services, admin } = await adminTestApp(t, 'pglite');
  await createTestCollection(app, admin, { name: 'queued', dimension: DIMENSION });
  const graphs = graphThreadOf(services.indexes.vectorStore);
  // As from a graph thread busy with a large file: no insert is answered until released.
  const answers = holdInsertAnswers(graphs);
  t.teardown(() => answers.release());
  const rowsInFlight = recordInsertRowsInFlight(graphs);

  const model = localEmbeddingPlugin.create({ dimension: DIMENSION }, {});
  const embed = async (texts: string[], kind: 'document' | 'query') => (await model.embed(texts, kind)).vectors.map((vector) => Array.from(vector));
  const texts = Array.from({ length: COUNT }, (_, n) => textOf(n));
  const vectors = await embed(texts, 'document');
  const embeddings = new Map(texts.map((_, n) => [`m${n}`, vectors[n]!]));
  // The last vector is the query's own embedding: the query's nearest row, written last.
  const lastQuery = textOf(COUNT);
  embeddings.set('last', (await embed([lastQuery], 'query'))[0]!);

  const items = [...embeddings].map(([id, embedding], n) => ({ id, embedding, text: n < COUNT ? texts[n]! : lastQuery }));
  for (let start = 0; start < items.length; start += PER_REQUEST) {
    const response = await app.inject({ method: 'POST', url: '/v1/collections/queued/vectors/upsert', headers: admin, payload: { vectors: items.slice(start, start + PER_REQUEST) } });
    t.equal(response.statusCode, 200, response.body);
  }
  t.ok(rowsInFlight.max <= maxRowsInFlight, `at most ${maxRowsInFlight} rows sent to the graph thread (${rowsInFlight.max})`);

  const query = async (text: string) => {
    const response = await app.inject({ method: 'POST', url: '/v1/collections/queued/query', headers: admin, payload: { query: text, search_mode: 'semantic', top_k: 10, skip_cache: true } });
    t.equal(response.statusCode, 200, response.body);
    const queryVector = (await embed([text], 'query'))[0]!;
    const ids = (response.json().results as Array<{ id: string }>).map((result) => result.id);
    const exactBest = Math.max(...[...embeddings.values()].map((embedding) => cosine(queryVector, embedding)));
    return { ids, bestScore: cosine(queryVector, embeddings.get(ids[0]!)!), exactBest };
  };
  const beforeDeletion = await query(lastQuery);
  t.equal(beforeDeletion.ids[0], 'last', 'the row written last is found while the graph may not hold it');

  // Rows of the first segment and of a middle one: each deletion moves a row of the last segment into its hole.
  const deleted = ['last', 'm10', `m${defaultRowsPerSegment + 7}`];
  const deletion = await app.inject({ method: 'POST', url: '/v1/collections/queued/vectors/delete', headers: admin, payload: { ids: deleted } });
  t.equal(deletion.statusCode, 200, deletion.body);
  for (const id of deleted) embeddings.delete(id);
  for (const text of [lastQuery, textOf(10), textOf(COUNT - 1)]) {
    const { ids, bestScore, exactBest } = await query(text);
    t.notOk(ids.some((id) => deleted.includes(id)), `${text}: no deleted vector is returned`);
    t.ok(Math.abs(bestScore - exactBest) < 1e-5, `${text}: the best result is an exact nearest neighbour`);
  }
  const stats = (await app.inject({ url: '/v1/collections/queued/stats', headers: admin })).json();
  t.equal(stats.vectors, COUNT + 1 - deleted.length, 'the store holds every other vector');

  // The graph catches up: every insert answered, the waiting ones sent, within the bound still.
  answers.release();
  await t.resolves(services.indexes.vectorStore.close(), 'the store closes once the graph holds every write');
  t.equal(rowsInFlight.now, 0);
  t.ok(rowsInFlight.max <= maxRowsInFlight, `at most ${maxRowsInFlight} rows in flight until then (${rowsInFlight.max})`);
});
