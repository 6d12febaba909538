/**
 * Queries while a deleted document's chunks are still being written to the indexes. The chunk
 * rows went first; the keyword and vector writes that follow used to write entries for them all
 * the same, which lived until the ingestion's clean-up after the whole slice (~14 s for 4,096
 * chunks with HNSW on PostgreSQL): they took places in every top-k and were dropped at the fetch,
 * so a semantic top_k of 10 answered with 1 result, and the query cache kept that answer. The SQL
 * keyword index and pgvector now write nothing for rows that are gone. The deletion is run from
 * inside the index writes; the queries right after them.
 */
import t from 'tap';
import type { Config } from '../../src/config.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const paragraphs = (count: number, tag: string) =>
  Array.from({ length: count }, (_, index) => `Capybara ${tag} ${index}: the capybara grazes by the river, capybara herds rest in the sun.`).join('\n\n');
/** Closer to the query than the live documents in both rankings, so its entries would come first. */
const doomedParagraphs = (count: number) =>
  Array.from({ length: count }, (_, index) => `Capybara river ${index}: capybara by the river, river capybara.`).join('\n\n');

// The stores that check rows on write; PGlite's defaults (memory, embedded) leave it to the clean-up.
const sqlStores: Partial<Config> = { vectorStore: 'pgvector', keywordIndex: 'sql' };

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend, sqlStores);
    const name = 'queried-mid-delete';
    const collection = await createTestCollection(app, admin, { name, chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' });
    const upload = async (filename: string, content: string) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${name}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const query = async (mode: string) => {
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload: { query: 'capybara river', search_mode: mode, top_k: 3 } });
      t.equal(response.statusCode, 200, response.body);
      return response.json() as { results: Array<{ document_id: string }> };
    };
    const documentsOf = (answer: { results: Array<{ document_id: string }> }) => answer.results.map((result) => result.document_id).sort();

    const live = [];
    for (const tag of ['north', 'south', 'east']) live.push(await upload(`${tag}.txt`, paragraphs(1, tag)));
    await waitForIngestion(app, name, admin);

    const { keywordIndex, vectorStore } = services.indexes;
    const originals = { add: keywordIndex.add, upsert: vectorStore.upsert };
    t.teardown(() => Object.assign(keywordIndex, { add: originals.add }));
    t.teardown(() => Object.assign(vectorStore, { upsert: originals.upsert }));
    const answers: Record<string, Awaited<ReturnType<typeof query>>> = {};
    let deleted: string | undefined;
    keywordIndex.add = async (collectionId, entries) => {
      const [processing] = await services.sql<{ id: string }>("select id from documents where collection_id = ? and status = 'processing'", [collection.id]);
      if (!deleted && processing) {
        deleted = processing.id;
        const response = await app.inject({ method: 'DELETE', url: `/v1/collections/${name}/documents/${deleted}`, headers: admin });
        t.equal(response.statusCode, 204, 'deleted after its rows were written, before its index entries');
        await originals.add.call(keywordIndex, collectionId, entries);
        answers.keyword = await query('keyword');
        return;
      }
      return originals.add.call(keywordIndex, collectionId, entries);
    };
    let semanticAnswered!: () => void;
    const afterVectorWrite = new Promise<void>((resolve) => { semanticAnswered = resolve; });
    vectorStore.upsert = async (records) => {
      await originals.upsert.call(vectorStore, records);
      if (!deleted || answers.semantic) return;
      answers.semantic = await query('semantic');
      semanticAnswered();
    };

    await upload('doomed.txt', doomedParagraphs(12));
    // Not waitForIngestion alone: with the document gone, it sees nothing processing at once.
    await afterVectorWrite;
    await waitForIngestion(app, name, admin);
    Object.assign(keywordIndex, { add: originals.add });
    Object.assign(vectorStore, { upsert: originals.upsert });
    t.ok(deleted, 'the deletion ran while the chunks were indexed');

    for (const mode of ['keyword', 'semantic'] as const) {
      t.same(documentsOf(answers[mode]!), [...live].sort(), `${mode}, right after the index write: the three live documents fill the top 3 (the answer cached)`);
    }
  });
}
