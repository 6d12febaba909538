/**
 * JSON has no infinity, but `JSON.parse` reads a number past a double's range (1e400) as one, and
 * `JSON.stringify` writes it back as null: such a number in a JSON body or in an upload's metadata
 * field is a 400 naming where, and nothing is written. A query's `min_score` is only compared, so
 * an infinite one is a valid (empty) answer.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    const sendJson = (method: 'POST' | 'PATCH', url: string, body: string) =>
      app.inject({ method, url, headers: { ...admin, 'content-type': 'application/json' }, payload: body });
    const collectionNames = async () => ((await app.inject({ url: '/v1/collections', headers: admin })).json().data as Array<{ name: string }>).map((item) => item.name).sort();
    await createTestCollection(app, admin, { name: 'numbers', dimension: 4 });

    await t.test('collections: create and update', async (t) => {
      assertError(t, await sendJson('POST', '/v1/collections', '{"name":"infinite","default_min_score":1e400}'), 400, /^body\.default_min_score is a number beyond the range of a double/, 'create');
      t.same(await collectionNames(), ['numbers'], 'nothing created');
      assertError(t, await sendJson('PATCH', '/v1/collections/numbers', '{"default_min_score":-1e400,"description":"kept?"}'), 400, /body\.default_min_score/, 'update');
      t.match((await app.inject({ url: '/v1/collections/numbers', headers: admin })).json(), { default_min_score: 0, description: null }, 'nothing updated');
    });

    await t.test('raw vectors: in the embedding and in metadata', async (t) => {
      assertError(t, await sendJson('POST', '/v1/collections/numbers/vectors/upsert', '{"vectors":[{"id":"a","embedding":[1,0,0,0]},{"id":"b","embedding":[0,1e999,0,0]}]}'), 400, /body\.vectors\[1\]\.embedding\[1\] is a number beyond/, 'embedding');
      assertError(t, await sendJson('POST', '/v1/collections/numbers/vectors/upsert', '{"vectors":[{"id":"a","embedding":[1,0,0,0],"metadata":{"deep":{"n":-1e400}}}]}'), 400, /body\.vectors\[0\]\.metadata\.deep\.n/, 'metadata');
      t.match((await app.inject({ url: '/v1/collections/numbers/stats', headers: admin })).json(), { raw_vectors: 0, chunks: 0 }, 'nothing written');
    });

    await t.test('an upload whose metadata field holds one', async (t) => {
      const body = multipartUpload([{ filename: 'note.txt', content: 'a short note', contentType: 'text/plain' }], { metadata: '{"n":1e400}' });
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/numbers/documents', headers: { ...admin, ...body.headers }, payload: body.payload }), 400, /^metadata\.n is a number beyond/, 'upload');
      t.equal((await app.inject({ url: '/v1/collections/numbers/documents', headers: admin })).json().total, 0, 'no document');
    });

    await t.test('a filter compares with 1e400: 400 saying the number is beyond a double, in every operator', async (t) => {
      for (const filter of ['{"n":1e400}', '{"n":{"$ne":-1e400}}', '{"n":{"$in":[1,1e400]}}', '{"n":{"$gt":1e400}}']) {
        const response = await sendJson('POST', '/v1/collections/numbers/query', `{"query":"plain words","filters":${filter}}`);
        assertError(t, response, 400, /^Operator "\$\w+" on field "n" needs a finite number: -?1e400 and the like are beyond a double$/, filter);
      }
    });

    await t.test('a query compares with an infinite min_score: 200, no results', async (t) => {
      t.same((await sendJson('POST', '/v1/collections/numbers/vectors/upsert', '{"vectors":[{"id":"a","embedding":[1,0,0,0],"text":"plain words"}]}')).json(), { upserted: 1 });
      const response = await sendJson('POST', '/v1/collections/numbers/query', '{"query":"plain words","search_mode":"keyword","min_score":1e400,"skip_cache":true}');
      t.equal(response.statusCode, 200, response.body);
      t.same(response.json().results, []);
      const finite = await sendJson('POST', '/v1/collections/numbers/query', '{"query":"plain words","search_mode":"keyword","skip_cache":true}');
      t.same(finite.json().results.map((result: { id: string }) => result.id), ['a'], 'found without it');
    });

    await t.test('the query cache keeps 1e400 and -1e400 apart (JSON writes both as null)', async (t) => {
      const cachedQuery = (minScore: string) => sendJson('POST', '/v1/collections/numbers/query', `{"query":"plain words","search_mode":"keyword","min_score":${minScore}}`);
      t.same((await cachedQuery('1e400')).json().results, [], 'above every score: nothing');
      const below = (await cachedQuery('-1e400')).json();
      t.same(below.results.map((result: { id: string }) => result.id), ['a'], 'below every score: found, not the cached empty answer');
      t.notOk(below.timings.cached, 'computed, not served from the cache');
      t.same((await cachedQuery('1e400')).json().results, [], 'and the first is still answered as before');
    });
  });
}
