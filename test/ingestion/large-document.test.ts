/**
 * A document with more chunks than one embedding slice (4,096) is embedded and written slice by
 * slice: every chunk of every slice ends up in the table and in both indexes, the document ends
 * ready with its full chunk count, and re-processing replaces the chunks instead of adding to them.
 */
import t from 'tap';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';

const PARAGRAPHS = 4_500;

function paragraph(n: number): string {
  return `Entry ${n} of the ledger records cargo item marker${n} loaded at berth ${n % 40}.`;
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, close } = await buildTestApp(backend);
    t.teardown(close);
    const admin = { cookie: await setupAdmin(app) };
    const created = await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'ledger', chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' } });
    t.equal(created.statusCode, 201, created.body);

    const text = Array.from({ length: PARAGRAPHS }, (_, n) => paragraph(n)).join('\n\n');
    const upload = multipartUpload([{ filename: 'ledger.txt', content: text, contentType: 'text/plain' }]);
    const uploaded = await app.inject({ method: 'POST', url: '/v1/collections/ledger/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
    t.equal(uploaded.statusCode, 202, uploaded.body);
    const documentId = uploaded.json().id as string;
    await waitForIngestion(app, 'ledger', admin, 180_000);

    const document = (await app.inject({ method: 'GET', url: `/v1/collections/ledger/documents/${documentId}`, headers: admin })).json();
    t.equal(document.status, 'ready', document.error);
    t.equal(document.chunk_count, PARAGRAPHS, 'one chunk per paragraph, across two slices');
    const stats = (await app.inject({ method: 'GET', url: '/v1/collections/ledger/stats', headers: admin })).json();
    t.equal(stats.chunks, PARAGRAPHS);

    const find = async (n: number, mode: string) => {
      // Semantic search gets the whole paragraph: its own vector is the one nearest to it.
      const query = mode === 'keyword' ? `marker${n}` : paragraph(n);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/ledger/query', headers: admin, payload: { query, search_mode: mode, top_k: 1, skip_cache: true } });
      t.equal(response.statusCode, 200, response.body);
      return response.json().results[0] as { text: string; chunk_index: number } | undefined;
    };
    for (const n of [0, 4_095, 4_096, PARAGRAPHS - 1]) {
      for (const mode of ['keyword', 'semantic']) {
        const hit = await find(n, mode);
        t.equal(hit?.text, paragraph(n), `${mode}: chunk ${n} is indexed`);
      }
    }

    const reprocessed = await app.inject({ method: 'POST', url: `/v1/collections/ledger/documents/${documentId}/reprocess`, headers: admin });
    t.equal(reprocessed.statusCode, 202, reprocessed.body);
    await waitForIngestion(app, 'ledger', admin, 180_000);
    const after = (await app.inject({ method: 'GET', url: '/v1/collections/ledger/stats', headers: admin })).json();
    t.equal(after.chunks, PARAGRAPHS, 're-processing replaces the chunks of every slice');
    t.equal((await find(PARAGRAPHS - 1, 'keyword'))?.text, paragraph(PARAGRAPHS - 1));
  });
}
