/**
 * A deletion that lands between a chunk slice's row write and its index writes: the rows go, and
 * so must the index entries written after the deletion looked for them. Left behind, they took
 * places in every top-k (the fetch then drops them) and skewed BM25 statistics, so live documents
 * vanished from results. The moment is forced by running the deletion from inside the index write.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const paragraphs = (count: number, tag: string) =>
  Array.from({ length: count }, (_, index) => `Capybara ${tag} ${index}: the capybara grazes by the river, capybara herds rest in the sun.`).join('\n\n');

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await adminTestApp(t, backend);
    const { app, admin, services } = ctx;
    const upload = async (collection: string, filename: string, content: string) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };

    for (const stage of ['keywordIndex', 'vectorStore'] as const) {
      await t.test(`a document deleted while its chunks enter the ${stage === 'keywordIndex' ? 'keyword index' : 'vector store'}: nothing of it stays findable`, async (t) => {
        const name = `late-delete-${stage.toLowerCase()}`;
        await createTestCollection(app, admin, { name, chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' });
        const index = services.indexes[stage] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
        const method = stage === 'keywordIndex' ? 'add' : 'upsert';
        const original = index[method]!;
        let deleted: string | undefined;
        index[method] = async function (this: unknown, ...args: unknown[]) {
          const [documentId] = await services.sql<{ id: string }>("select d.id from documents d join collections c on c.id = d.collection_id where c.name = ? and d.status = 'processing'", [name]);
          if (!deleted && documentId) {
            deleted = documentId.id;
            const response = await app.inject({ method: 'DELETE', url: `/v1/collections/${name}/documents/${deleted}`, headers: admin });
            t.equal(response.statusCode, 204, 'deleted between its row write and this index write');
          }
          return original.apply(this, args);
        };
        t.teardown(() => { index[method] = original; });
        await upload(name, 'doomed.txt', paragraphs(12, 'doomed'));
        await waitForIngestion(app, name, admin);
        index[method] = original;
        t.ok(deleted, 'the deletion ran');

        const live = [];
        for (const tag of ['north', 'south', 'east']) live.push(await upload(name, `${tag}.txt`, paragraphs(1, tag)));
        await waitForIngestion(app, name, admin);
        const stats = (await app.inject({ url: `/v1/collections/${name}/stats`, headers: admin })).json();
        t.match(stats, { documents: 3, chunks: 3, vectors: 3 }, 'the live documents alone are counted, vectors included');
        for (const mode of ['semantic', 'keyword', 'hybrid']) {
          const answer = (await app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload: { query: 'capybara river', search_mode: mode, top_k: 3, skip_cache: true } })).json();
          t.same(answer.results.map((result: { document_id: string }) => result.document_id).sort(), [...live].sort(), `${mode}: the three live documents fill the top 3`);
        }
      });
    }
  });
}
