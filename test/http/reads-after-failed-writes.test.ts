import t from 'tap';
import { adminTestApp, createTestCollection } from '../support/test-app.js';

t.test('reads that flush buffered writes first still answer when that write fails', async (t) => {
  const { app, services, cookie } = await adminTestApp(t, 'pglite');
  await createTestCollection(app, { cookie }, { name: 'reads' });
  const failures: string[] = [];
  const failing = (name: string) => () => {
    failures.push(name);
    return Promise.reject(new Error(`${name} could not be written`));
  };
  const writers = [
    [services.queryRuntime.events, 'query events'], [services.embeddingUsage, 'embedding usage'], [services.apiKeyUsage, 'API-key use'],
  ] as const;
  for (const [writer, name] of writers) writer.flush = failing(name);
  // Shutdown flushes too: the writers work again before the app is closed.
  t.teardown(() => {
    for (const [writer] of writers) delete (writer as { flush?: unknown }).flush;
  });

  for (const url of ['/v1/collections/reads/analytics', '/v1/usage', '/v1/collections/reads/stats', '/v1/admin/api-keys']) {
    const response = await app.inject({ url, headers: { cookie } });
    t.equal(response.statusCode, 200, `${url}: ${response.body}`);
  }
  t.same([...new Set(failures)].sort(), ['API-key use', 'embedding usage', 'query events'], 'each read did try to write first');
});
