/**
 * The success bodies the OpenAPI document describes are the ones the routes answer
 * (test/support/openapi-responses.ts), route by route.
 */
import t from 'tap';
import { documentedResponses } from '../support/openapi-responses.js';
import { buildTestApp, testBackends } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend);
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const assertDocumented = await documentedResponses(app);

    await t.test('health', async (t) => {
      for (const url of ['/health', '/health/ready']) assertDocumented(t, 'GET', url, await app.inject({ url }));
    });
  });
}
