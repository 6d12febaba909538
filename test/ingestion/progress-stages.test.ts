/**
 * A document's `progress` names the stage it is in. A stage that begins after the batch's first
 * 250 ms is shown at once, and one reported sooner when that interval ends. Before, a report within
 * the interval was dropped: a document said "parsing" while a provider embedded it, and "embedding"
 * throughout a write that hung (indexing came a moment after embedding's last update).
 */
import t from 'tap';
import type { VectorRecord } from '../../src/plugins.js';
import { startProviderFake } from '../support/provider-fakes.js';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';

const KEY = 'sk-progress-stages-key';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    // Longer than the progress interval, so that embedding ends past the batch's first 250 ms.
    const fake = await startProviderFake({ apiKey: KEY, latencyMs: 400 });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const headers = { cookie: await setupAdmin(ctx.app) };
    const created = await ctx.app.inject({
      method: 'POST', url: '/v1/collections', headers,
      payload: { name: 'staged', embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 64, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('openai') },
    });
    t.equal(created.statusCode, 201, created.body);

    const { vectorStore } = ctx.services.indexes;
    const upsert = vectorStore.upsert.bind(vectorStore);
    let release = () => undefined as void;
    const released = new Promise<void>((resolve) => { release = resolve; });
    vectorStore.upsert = async (records: VectorRecord[]) => {
      await released;
      return upsert(records);
    };

    const body = multipartUpload([{ filename: 'tides.txt', content: 'Tide tables list the high and low waters of each day.', contentType: 'text/plain' }]);
    const uploaded = await ctx.app.inject({ method: 'POST', url: '/v1/collections/staged/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
    t.equal(uploaded.statusCode, 202, uploaded.body);
    const id = uploaded.json().id as string;

    const seen: string[] = [];
    let progress: { stage: string; message: string } | undefined;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
      progress = (await ctx.app.inject({ url: `/v1/collections/staged/documents/${id}`, headers })).json().progress;
      if (progress && seen.at(-1) !== progress.stage) seen.push(progress.stage);
      if (progress?.stage === 'indexing') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    t.equal(progress?.stage, 'indexing', `while its write hangs the document says indexing (stages seen: ${seen.join(' -> ')})`);
    t.ok(seen.includes('parsing'), 'the claim said parsing');
    t.ok(seen.indexOf('embedding') > seen.indexOf('parsing'), 'while the provider answered, it said embedding, not parsing');
    t.match(progress?.message, /^indexing chunks 1-1 of 1$/);
    release();
    const [document] = await waitForIngestion(ctx.app, 'staged', headers);
    t.match(document, { status: 'ready', error: null });
  });
}
