/**
 * The hosted and self-hosted embedding providers through the HTTP API, against local fakes that
 * answer with each provider's real shapes (test/support/provider-fakes.ts): request bodies and
 * headers, batch limits, token counts, input types, dimensions; then faults: 429 with
 * Retry-After, 500s, a hang past the timeout, malformed JSON, a refused key, vectors of the wrong
 * length; and the checks made when a collection is created.
 *
 * The app keeps at most 2 requests in flight per collection, so that a slice of 256 chunks is cut
 * by the providers' own limits (Cohere 96, self-hosted 32) rather than spread below them.
 *
 * The request timeout is 3 s: the fake answers in this process, and with other test files running
 * on the same cores a 220-text request sometimes took longer than a shorter timeout; the retry then
 * embedded its chunks twice and the batching checks failed.
 */
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { startProviderFake, type ProviderFake, type Route } from '../support/provider-fakes.js';
import { buildTestApp, setupAdmin, testBackends } from '../support/test-app.js';
import { ONE_PARAGRAPH_CHUNKS, paragraphs, providerApi } from './provider-api.js';

const KEY = 'sk-test-PROVIDER-KEY-0123456789abcdef';
const CHUNKS = 220;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const fake = await startProviderFake({ apiKey: KEY });
    t.teardown(() => fake.close());
    const ctx = await buildTestApp(backend, { masterKey: 'test-master-key', providerTimeoutMs: 3000, providerMaxRetries: 2, providerConcurrency: 2, providerOutageWaitMs: 20_000 });
    t.teardown(() => ctx.close());
    const cookie = await setupAdmin(ctx.app);
    const api = providerApi(ctx.app, { cookie });

    const providers: Array<{ route: Route; limit: number; collection: Record<string, unknown>; shape(body: any): void; queryShape(body: any): void; key: boolean }> = [
      {
        route: 'openai', limit: 2048, key: true,
        collection: { embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 64, embedding_base_url: fake.baseUrl('openai') },
        shape: (body) => t.match(body, { model: 'text-embedding-3-small', dimensions: 64, encoding_format: 'float' }),
        queryShape: (body) => t.equal(body.input.length, 1),
      },
      {
        route: 'cohere', limit: 96, key: true,
        collection: { embedding_provider: 'cohere', embedding_model: 'embed-english-light-v3.0', embedding_base_url: fake.baseUrl('cohere') },
        shape: (body) => t.match(body, { model: 'embed-english-light-v3.0', input_type: 'search_document', embedding_types: ['float'] }),
        queryShape: (body) => t.equal(body.input_type, 'search_query'),
      },
      {
        route: 'voyage', limit: 1000, key: true,
        collection: { embedding_provider: 'voyage', embedding_model: 'voyage-3.5', dimension: 256, embedding_base_url: fake.baseUrl('voyage') },
        shape: (body) => t.match(body, { model: 'voyage-3.5', input_type: 'document', output_dimension: 256 }),
        queryShape: (body) => t.equal(body.input_type, 'query'),
      },
      {
        route: 'compatible', limit: 32, key: false,
        collection: { embedding_provider: 'openai_compatible', embedding_model: 'nomic-embed-text', dimension: 768, embedding_base_url: fake.baseUrl('compatible') },
        shape: (body) => {
          t.match(body, { model: 'nomic-embed-text', encoding_format: 'float' });
          t.notOk('dimensions' in body, 'no `dimensions` for a self-hosted server');
        },
        queryShape: (body) => t.equal(body.input.length, 1),
      },
    ];

    for (const provider of providers) {
      await t.test(`${provider.route}: ingestion and query with the provider's shapes and limits`, async (t) => {
        fake.reset();
        const name = `p-${provider.route}`;
        const created = await api.createCollection({ name, ...provider.collection, ...ONE_PARAGRAPH_CHUNKS, ...(provider.key ? { embedding_api_key: KEY } : {}) });
        t.equal(created.has_embedding_api_key, provider.key);
        const texts = paragraphs(CHUNKS, provider.route);
        await api.upload(name, 'corpus.txt', texts.join('\n\n'));
        const [document] = await api.settle(name);
        t.equal(document!.status, 'ready', document!.error ?? '');
        t.equal(document!.chunk_count, CHUNKS);

        const calls = fake.requestsTo(provider.route);
        const sizes = calls.map((call) => (call.body.input ?? call.body.texts).length);
        t.ok(calls.length >= 2, `${calls.length} requests`);
        t.ok(sizes.every((size) => size <= provider.limit), `every request within the limit of ${provider.limit}: ${sizes.join(', ')}`);
        t.equal(sizes.reduce((sum, size) => sum + size, 0), CHUNKS, 'each chunk embedded once');
        if (provider.limit < 128) t.ok(sizes.includes(provider.limit), 'requests are filled up to the limit');
        for (const call of calls) {
          provider.shape(call.body);
          t.equal(call.authorization, provider.key ? `Bearer ${KEY}` : undefined, 'the key goes in the Authorization header only');
        }

        const stats = await api.stats(name);
        const billed = provider.route === 'compatible'
          ? texts.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0)
          : calls.reduce((sum, call) => sum + call.body[provider.route === 'cohere' ? 'texts' : 'input'].reduce((s: number, text: string) => s + Math.max(1, Math.ceil(text.split(/\s+/).length * 1.3)), 0), 0);
        t.equal(stats.embedding.tokens, billed, provider.route === 'compatible' ? 'tokens estimated when the server reports none' : 'tokens as the provider billed them');
        t.equal(stats.embedding.cache_misses, CHUNKS);

        fake.reset();
        const answer = await api.query(name, { query: texts[42], search_mode: 'semantic', top_k: 3 });
        t.equal(answer.results.length, 3);
        t.equal(answer.results[0].text, texts[42], 'the nearest chunk comes first');
        const [queryCall] = fake.requestsTo(provider.route);
        provider.queryShape(queryCall!.body);
      });
    }

    const faults = 'faults';
    await api.createCollection({ name: faults, embedding_provider: 'openai', embedding_model: 'text-embedding-3-small', dimension: 64, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('openai') });
    let uploads = 0;
    const ingestOne = async () => {
      uploads += 1;
      const { id } = await api.upload(faults, `doc-${uploads}.txt`, paragraphs(3, `fault${uploads}`).join('\n\n'));
      await api.settle(faults);
      return api.ok('GET', `/v1/collections/${faults}/documents/${id}`);
    };

    await t.test('429 with Retry-After: the client waits as told, then succeeds', async (t) => {
      fake.reset();
      fake.failNext('openai', { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'Rate limit reached for requests', type: 'requests' } } });
      const document = await ingestOne();
      t.equal(document.status, 'ready', document.error ?? '');
      const [first, second] = fake.requestsTo('openai');
      t.ok(second!.at - first!.at >= 950, `retried ${second!.at - first!.at} ms later (Retry-After: 1)`);
    });

    await t.test('500s within the retry budget are absorbed', async (t) => {
      fake.reset();
      fake.failNext('openai', { status: 500, body: { error: { message: 'The server had an error' } } }, 2);
      const document = await ingestOne();
      t.equal(document.status, 'ready', document.error ?? '');
      t.equal(fake.requestsTo('openai').length, 3, 'two failures and a success');
    });

    await t.test('a hang past the timeout is abandoned and retried', async (t) => {
      fake.reset();
      fake.failNext('openai', { hang: true });
      const document = await ingestOne();
      t.equal(document.status, 'ready', document.error ?? '');
      t.equal(fake.requestsTo('openai').length, 2);
    });

    await t.test('a persistent 503 fails the attempt; the document waits for the provider and succeeds later', async (t) => {
      fake.reset();
      fake.failNext('openai', { status: 503, body: { error: { message: 'The engine is currently overloaded' } } }, 3);
      uploads += 1;
      const { id } = await api.upload(faults, `doc-${uploads}.txt`, paragraphs(2, `retry${uploads}`).join('\n\n'));
      let document: any;
      for (let waited = 0; waited < 10_000; waited += 50) {
        document = await api.ok('GET', `/v1/collections/${faults}/documents/${id}`);
        if (document.progress?.message?.includes('waiting for the provider')) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      t.match(document.progress.message, /embedding failed: openai answered 503: The engine is currently overloaded \(waiting for the provider since .*, at most 20 s\)/);
      await api.settle(faults);
      document = await api.ok('GET', `/v1/collections/${faults}/documents/${id}`);
      t.equal(document.status, 'ready', 'the retried job succeeds');
    });

    const failures: Array<[string, Parameters<ProviderFake['failNext']>[1], RegExp]> = [
      ['malformed JSON', { malformed: true }, /^embedding failed: openai answered with a body that is not JSON$/],
      ['vectors of the wrong length', { dimension: 32 }, /^embedding failed: openai model text-embedding-3-small returned 32-dimensional vectors, but dimension 64 is configured$/],
      // OpenAI's account out of credit: a 429 no wait mends.
      ['a 429 for an account out of credit', { status: 429, body: { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } } },
        /^embedding failed: openai answered 429: You exceeded your current quota, please check your plan and billing details\.$/],
      ['a 400', { status: 400, body: { error: { message: "'$.input' is invalid. Please check the API reference", type: 'invalid_request_error' } } }, /^embedding failed: openai answered 400: '\$\.input' is invalid/],
      // Vectors are matched to texts by index: one that names no text sent is refused, not stored on the wrong chunk.
      ['an index that names no text sent', { status: 200, body: { data: [{ index: 1, embedding: Array.from({ length: 64 }, () => 0.125) }], usage: { prompt_tokens: 3 } } },
        /^embedding failed: openai answered with an unexpected body: "data" indexes must be 0 to 0, one each; found 1 at position 0$/],
      // A null or a number sent as text would be stored as 0 or NaN, a vector that matches nothing.
      ['a vector holding a value that is no number', { status: 200, body: { data: [{ index: 0, embedding: [...Array.from({ length: 63 }, () => 0.125), null] }], usage: { prompt_tokens: 3 } } },
        /^embedding failed: openai returned an embedding that is not a list of numbers$/],
      ['a vector holding a number as text', { status: 200, body: { data: [{ index: 0, embedding: [...Array.from({ length: 63 }, () => 0.125), '0.125'] }], usage: { prompt_tokens: 3 } } },
        /^embedding failed: openai returned an embedding that is not a list of numbers$/],
    ];
    for (const [what, fault, message] of failures) {
      await t.test(`${what}: the document fails at once with the reason`, async (t) => {
        fake.reset();
        fake.failNext('openai', fault);
        const document = await ingestOne();
        t.equal(document.status, 'failed');
        t.match(document.error, message);
        t.equal(document.progress.stage, 'embedding', 'progress names the stage that failed');
        t.equal(fake.requestsTo('openai').length, 1, 'not retried');
      });
    }

    await t.test('a refused key: failed with the provider message, the key it echoed removed', async (t) => {
      const wrongKey = 'sk-WRONG-key-that-must-not-leak-42';
      await api.createCollection({ name: 'wrong-key', embedding_provider: 'openai', embedding_api_key: wrongKey, embedding_base_url: fake.baseUrl('openai'), dimension: 64 });
      await api.upload('wrong-key', 'a.txt', 'Some text about lighthouses.');
      const [document] = await api.settle('wrong-key');
      t.equal(document!.status, 'failed');
      t.match(document!.error, /^embedding failed: openai answered 401: Incorrect API key provided: \[redacted\]/);
      t.notMatch(JSON.stringify(document), wrongKey);
      const query = await api.send('POST', '/v1/collections/wrong-key/query', { query: 'lighthouse', search_mode: 'semantic' });
      assertError(t, query, 502, /^openai answered 401: Incorrect API key provided: \[redacted\]/, 'query with a refused key');
      t.notMatch(query.body, wrongKey);
    });

    await t.test('a host name that does not exist: the document fails at once, not retried later', async (t) => {
      // .invalid never resolves (RFC 2606): the answer is ENOTFOUND, which no retry mends.
      await api.createCollection({ name: 'no-such-host', embedding_provider: 'openai_compatible', embedding_model: 'nomic-embed-text', dimension: 64, embedding_base_url: 'http://no-such-host.invalid/v1' });
      const { id } = await api.upload('no-such-host', 'a.txt', 'Some text about harbours.');
      let document: any;
      for (let waited = 0; waited < 30_000; waited += 50) {
        document = await api.ok('GET', `/v1/collections/no-such-host/documents/${id}`);
        if (document.status === 'failed' || /will retry|waiting for the provider/.test(document.progress?.message ?? '')) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      t.equal(document.status, 'failed', `not set back to be retried: ${document.progress?.message}`);
      t.match(document.error, /^embedding failed: openai_compatible could not be reached: ENOTFOUND/);
      const query = await api.send('POST', '/v1/collections/no-such-host/query', { query: 'harbour', search_mode: 'semantic' });
      assertError(t, query, 502, /^openai_compatible could not be reached: ENOTFOUND/, 'query');
    });

    await t.test('a certificate the service refuses: the document fails at once, not retried later', async (t) => {
      // A self-signed certificate (test/support/tls): no retry makes it trusted.
      const tls = new URL('../support/tls/', import.meta.url);
      const server = https.createServer({ key: await readFile(new URL('self-signed.key', tls)), cert: await readFile(new URL('self-signed.crt', tls)) }, (_request, response) => response.end('{}'));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
      const { port } = server.address() as AddressInfo;
      await api.createCollection({ name: 'self-signed', embedding_provider: 'openai_compatible', embedding_model: 'nomic-embed-text', dimension: 64, embedding_base_url: `https://127.0.0.1:${port}/v1` });
      const { id } = await api.upload('self-signed', 'a.txt', 'Some text about tides.');
      let document: any;
      for (let waited = 0; waited < 30_000; waited += 50) {
        document = await api.ok('GET', `/v1/collections/self-signed/documents/${id}`);
        if (document.status === 'failed' || /will retry|waiting for the provider/.test(document.progress?.message ?? '')) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      t.equal(document.status, 'failed', `not set back to be retried: ${document.progress?.message}`);
      t.match(document.error, /^embedding failed: openai_compatible could not be reached: DEPTH_ZERO_SELF_SIGNED_CERT/);
    });

    await t.test('an unknown model: the provider says so', async (t) => {
      await api.createCollection({ name: 'unknown-model', embedding_provider: 'openai', embedding_model: 'text-embedding-9', dimension: 64, embedding_api_key: KEY, embedding_base_url: fake.baseUrl('openai') });
      await api.upload('unknown-model', 'a.txt', 'Some text.');
      const [document] = await api.settle('unknown-model');
      t.match(document!.error, /openai answered 404: The model `text-embedding-9` does not exist/);
    });

    await t.test('a failing provider at query time is a 502 naming it', async (t) => {
      fake.reset();
      fake.failNext('openai', { status: 503, body: { error: { message: 'overloaded' } } }, 3);
      assertError(t, await api.send('POST', `/v1/collections/${faults}/query`, { query: 'fault1', search_mode: 'semantic', skip_cache: true }), 502, 'openai answered 503: overloaded');
      const gatewayPage = '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>';
      fake.failNext('openai', { status: 502, text: gatewayPage, contentType: 'text/html' }, 3);
      const behindProxy = await api.send('POST', `/v1/collections/${faults}/query`, { query: 'fault2', search_mode: 'semantic', skip_cache: true });
      assertError(t, behindProxy, 502, 'openai answered 502: an HTML page: 502 Bad Gateway', 'a proxy\'s error page is named by its title');
      const keyword = await api.query(faults, { query: 'fault1', search_mode: 'keyword' });
      t.ok(keyword.results.length > 0, 'keyword search needs no provider');
    });

    await t.test('collections that cannot work are refused at creation; nothing is created', async (t) => {
      const before = (await api.ok('GET', '/v1/collections')).total;
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ embedding_provider: 'openai' }, /embedding_api_key is required for provider openai/],
        [{ embedding_provider: 'cohere', embedding_api_key: KEY, embedding_model: 'embed-english-v3.0', dimension: 512 }, /cohere model embed-english-v3.0 cannot produce 512-dimensional vectors \(it offers 1024\)/],
        [{ embedding_provider: 'openai', embedding_api_key: KEY, embedding_model: 'text-embedding-ada-002', dimension: 512 }, /cannot produce 512/],
        [{ embedding_provider: 'openai', embedding_api_key: KEY, embedding_model: 'text-embedding-3-small', dimension: 2000 }, /it offers 1 to 1536/],
        [{ embedding_provider: 'voyage', embedding_api_key: KEY, embedding_model: 'voyage-next' }, /dimension is required for voyage model voyage-next/],
        [{ embedding_provider: 'openai_compatible', embedding_model: 'nomic-embed-text', dimension: 768 }, /embedding_base_url is required/],
        [{ embedding_provider: 'openai_compatible', dimension: 768, embedding_base_url: fake.baseUrl('compatible') }, /embedding_model is required/],
        [{ embedding_provider: 'openai_compatible', embedding_model: 'nomic-embed-text', embedding_base_url: fake.baseUrl('compatible') }, /dimension is required/],
        [{ embedding_preset_id: '00000000-0000-4000-8000-000000000000' }, /is not an embedding preset/],
      ];
      for (const [index, [body, detail]] of cases.entries()) {
        assertError(t, await api.send('POST', '/v1/collections', { name: `refused-${index}`, ...body }), 400, detail, JSON.stringify(body));
      }
      t.equal((await api.ok('GET', '/v1/collections')).total, before);
      const defaults = await api.createCollection({ name: 'cohere-defaults', embedding_provider: 'cohere', embedding_api_key: KEY });
      t.match(defaults, { embedding_model: 'embed-english-v3.0', dimension: 1024 }, 'model and dimension from the model table');
    });
  });
}
