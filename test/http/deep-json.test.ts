/**
 * JSON nested deeper than MAX_JSON_DEPTH is a 400, in a body and in an upload's metadata field.
 * Metadata about 1,000 levels deep made PGlite's jsonb code run out of WebAssembly memory, and after
 * a few such requests every request failed until a restart; at 5,000 levels any JSON route, login
 * included, overflowed the stack (a 500).
 */
import t from 'tap';
import { MAX_JSON_DEPTH } from '../../src/db/storable-values.js';
import { assertError } from '../support/assertions.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends } from '../support/test-app.js';

const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = { a: value };
  return value;
};
const nestedText = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const TOO_DEEP = new RegExp(`nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`);

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'deep', dimension: 4 });
    const json = { ...admin, 'content-type': 'application/json' };
    const upsert = (metadata: unknown) => app.inject({
      method: 'POST', url: '/v1/collections/deep/vectors/upsert', headers: admin,
      payload: { vectors: [{ id: 'v1', embedding: [1, 0, 0, 0], text: 'deep sea', metadata }] },
    });
    const stats = async () => (await app.inject({ url: '/v1/collections/deep/stats', headers: admin })).json();

    await t.test('a body nested 5,000 levels is a 400 on every JSON route, login included', async (t) => {
      const body = nestedText(5000);
      assertError(t, await app.inject({ method: 'POST', url: '/v1/auth/login', headers: { 'content-type': 'application/json' }, payload: body }), 400, TOO_DEEP, 'login');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections', headers: json, payload: body }), 400, TOO_DEEP, 'create a collection');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/deep/query', headers: json, payload: body }), 400, TOO_DEEP, 'query');
      const arrays = `${'['.repeat(5000)}${']'.repeat(5000)}`;
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/deep/vectors/upsert', headers: json, payload: arrays }), 400, TOO_DEEP, 'arrays');
    });

    await t.test('metadata 1,000 levels deep is refused, and the database keeps working', async (t) => {
      for (let attempt = 0; attempt < 4; attempt++) assertError(t, await upsert(nested(1000)), 400, TOO_DEEP, `upsert ${attempt + 1}`);
      const body = multipartUpload([{ filename: 'deep.txt', content: 'deep sea', contentType: 'text/plain' }], { metadata: nestedText(1000) });
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/deep/documents', headers: { ...admin, ...body.headers }, payload: body.payload }), 400, /^metadata nests objects and arrays deeper than/, 'upload metadata');
      t.match(await stats(), { documents: 0, chunks: 0, vectors: 0 }, 'nothing was written');
      t.equal((await upsert(nested(MAX_JSON_DEPTH - 3))).statusCode, 200, 'metadata as deep as a body may hold is stored');
      t.match(await stats(), { chunks: 1, vectors: 1 });
    });
  });
}
