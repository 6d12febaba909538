/**
 * A write the database refuses for the values written (SQLSTATE class 22: a NUL in text, an escape
 * jsonb does not take) fails the document at its first attempt, alone or with its whole batch: the
 * same rows would be refused again. Before, a document alone, or a batch all of whose documents were
 * refused, was retried as if the database were away, and failed only after every attempt.
 */
import t from 'tap';
import type { VectorRecord } from '../../src/plugins.js';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend, {}, { startWorkers: false });
    t.teardown(() => ctx.close());
    const headers = { cookie: await setupAdmin(ctx.app) };
    const { vectorStore } = ctx.services.indexes;
    const upsert = vectorStore.upsert.bind(vectorStore);
    // Parser output can no longer hold such values (src/parsing/storable-document.ts), so the database
    // is made to refuse one the way it refused them: a real statement, a real SQLSTATE 22P05.
    vectorStore.upsert = async (records: VectorRecord[]) => {
      if (records.some((record) => record.metadata.refused === true)) await ctx.services.sql('select ?::jsonb', ['{"text":"\\u0000"}']);
      return upsert(records);
    };
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/collections', headers, payload: { name: 'refused' } });
    t.equal(created.statusCode, 201);
    const upload = async (filename: string, text: string) => {
      const body = multipartUpload([{ filename, content: text, contentType: 'text/plain' }], { metadata: JSON.stringify({ refused: true }) });
      const response = await ctx.app.inject({ method: 'POST', url: '/v1/collections/refused/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, `${filename} accepted`);
      return response.json().id as string;
    };
    const read = async (id: string) => (await ctx.app.inject({ url: `/v1/collections/refused/documents/${id}`, headers })).json();
    const attempts = async (id: string) => {
      const [job] = await ctx.services.sql<{ attempts: number }>('select attempts from jobs where document_id = ?', [id]);
      return job!.attempts;
    };

    await t.test('a document alone fails at its first attempt', async (t) => {
      const lonely = await upload('lonely.txt', 'Lamplighters walked the streets at dusk.');
      await ctx.services.start();
      await waitForIngestion(ctx.app, 'refused', headers);
      t.match(await read(lonely), { status: 'failed', error: /^indexing failed: unsupported Unicode escape sequence/ }, 'the stage and the reason');
      t.equal(await attempts(lonely), 1, 'not retried');
      await ctx.services.ingestion.stop();
    });

    await t.test('a batch whose documents are all refused: each fails at its first attempt', async (t) => {
      const one = await upload('one.txt', 'Ferrymen crossed the river at dawn.');
      const two = await upload('two.txt', 'Glassblowers shape molten sand into bowls.');
      await ctx.services.start();
      await waitForIngestion(ctx.app, 'refused', headers);
      for (const id of [one, two]) {
        t.match(await read(id), { status: 'failed', error: /^indexing failed: unsupported Unicode escape sequence/ });
        t.equal(await attempts(id), 1, 'not retried');
      }
    });
  });
}
