/**
 * A document or a collection deleted while its ingestion is under way leaves no chunk or element
 * rows behind and is not found by any query: chunk and element writes check their owners
 * themselves (migration 0008 dropped the per-row foreign keys). The embedding provider fake holds
 * each answer, so the deletion lands between parsing and the chunk writes.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, setupAdmin, testBackends } from '../support/test-app.js';
import { ONE_PARAGRAPH_CHUNKS, paragraphs, providerApi } from '../providers/provider-api.js';

const KEY = 'sk-deleted-during-ingestion';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY, latencyMs: 400 });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const cookie = await setupAdmin(ctx.app);
    const api = providerApi(ctx.app, { cookie });
    const provider = { embedding_provider: 'cohere', embedding_model: 'embed-english-light-v3.0', embedding_api_key: KEY, embedding_base_url: fake.baseUrl('cohere'), ...ONE_PARAGRAPH_CHUNKS };
    const count = async (query: string, params: unknown[]) => Number((await ctx.services.sql<{ count: string | number }>(query, params))[0]!.count);
    const embeddingAsked = async (word: string) => {
      const deadline = Date.now() + 30_000;
      while (!fake.requestsTo('cohere').some((request) => JSON.stringify(request.body).includes(word))) {
        if (Date.now() > deadline) throw new Error(`no embedding request for "${word}"`);
        await sleep(5);
      }
    };
    const jobsFinished = async () => {
      const deadline = Date.now() + 30_000;
      while (await count(`select count(*) as count from jobs where status in ('queued', 'running')`, []) > 0) {
        if (Date.now() > deadline) throw new Error('ingestion jobs did not finish');
        await sleep(20);
      }
    };

    await t.test('a document deleted while it is embedded: no rows left, its neighbour ready', async (t) => {
      await api.createCollection({ name: 'racing', ...provider });
      const doomed = await api.upload('racing', 'doomed.txt', paragraphs(6, 'walrus').join('\n\n'));
      await embeddingAsked('walrus');
      await api.ok('DELETE', `/v1/collections/racing/documents/${doomed.id}`, undefined, 204);
      const kept = await api.upload('racing', 'kept.txt', paragraphs(6, 'heron').join('\n\n'));
      const documents = await api.settle('racing');
      t.same(documents.map((document) => [document.id, document.status]), [[kept.id, 'ready']], 'only the kept document, ready');
      await jobsFinished();

      t.equal(await count('select count(*) as count from chunks where document_id = ?', [doomed.id]), 0, 'no chunk rows of the deleted document');
      t.equal(await count('select count(*) as count from document_elements where document_id = ?', [doomed.id]), 0, 'no element rows of the deleted document');
      const stats = await api.stats('racing');
      t.match(stats, { documents: 1, chunks: documents[0]!.chunk_count, vectors: documents[0]!.chunk_count }, 'stats count the kept document alone');
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const answer = await api.query('racing', { query: 'walrus 3', search_mode: mode });
        t.notOk(answer.results.some((result: { document_id: string }) => result.document_id === doomed.id), `${mode}: nothing of the deleted document`);
      }
    });

    await t.test('a collection deleted while its document is embedded: no rows left', async (t) => {
      const created = await api.createCollection({ name: 'vanishing', ...provider });
      const document = await api.upload('vanishing', 'orphan.txt', paragraphs(6, 'narwhal').join('\n\n'));
      await embeddingAsked('narwhal');
      await api.ok('DELETE', '/v1/collections/vanishing', undefined, 204);
      await jobsFinished();
      t.equal(await count('select count(*) as count from chunks where collection_id = ?', [created.id]), 0, 'no chunk rows of the deleted collection');
      t.equal(await count('select count(*) as count from document_elements where document_id = ?', [document.id]), 0, 'no element rows of its document');
      t.equal(await count('select count(*) as count from documents where collection_id = ?', [created.id]), 0, 'no document rows');
    });
  });
}
