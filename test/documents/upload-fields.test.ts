/**
 * An upload's form takes "file" parts, `metadata` and `on_duplicate`: another field, or one sent
 * twice, is a 400 and nothing is stored. Both were ignored: a misspelt `metdata` lost the metadata
 * unseen, and of two `metadata` parts the last won.
 */
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { adminTestApp, createTestCollection, testBackends } from '../support/test-app.js';

/** A multipart body with fields in the order given, names repeated as written. */
function form(parts: Array<[name: string, value: string, filename?: string]>) {
  const boundary = '----upload-fields-boundary';
  const body = parts.map(([name, value, filename]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"\r\nContent-Type: text/plain` : ''}\r\n\r\n${value}\r\n`).join('');
  return { payload: `${body}--${boundary}--\r\n`, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'fields' });
    const post = (url: string, parts: Array<[string, string, string?]>) => {
      const body = form(parts);
      return app.inject({ method: 'POST', url: `/v1/collections/fields/${url}`, headers: { ...admin, ...body.headers }, payload: body.payload });
    };
    const file: [string, string, string] = ['file', 'Lighthouses guide ships past the reef.', 'light.txt'];
    const total = async () => (await app.inject({ url: '/v1/collections/fields/documents', headers: admin })).json().total as number;

    assertError(t, await post('documents', [file, ['metdata', '{"team":"red"}']]), 400, 'Field "metdata" is not taken: an upload takes "file" parts, "metadata" and "on_duplicate"', 'a misspelt field, single upload');
    assertError(t, await post('documents/batch', [file, ['ondup', 'keep']]), 400, /^Field "ondup" is not taken/, 'a misspelt field, batch');
    assertError(t, await post('documents', [['metadata', '{"team":"red"}'], file, ['metadata', '{"team":"tan"}']]), 400, 'Field "metadata" is sent twice: send it once', 'metadata twice');
    assertError(t, await post('documents', [['metadata', '{"team":"red"}', 'meta.json'], ['metadata', '{"team":"tan"}'], file]), 400, /sent twice/, 'metadata twice, once as a file');
    t.equal(await total(), 0, 'nothing was stored');
    const accepted = await post('documents', [file, ['metadata', '{"team":"red"}'], ['on_duplicate', 'keep']]);
    t.equal(accepted.statusCode, 202, accepted.body);
    t.same(accepted.json().metadata, { team: 'red' });
  });
}
