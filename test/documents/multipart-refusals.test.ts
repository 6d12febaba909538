/**
 * What the multipart parser refuses, on every upload path (single document, batch, upload-session
 * files): a content type busboy cannot start on (no boundary, one too long) is a 400, not a 500; the
 * request limits (files, fields, field size) answer in words that state the limit; a field sent as
 * `application/json` is read as the JSON it is. Refused requests keep nothing.
 */
import t, { type Test } from 'tap';
import { assertError } from '../support/assertions.js';
import { storedOriginals } from '../support/stored-originals.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends } from '../support/test-app.js';
import { MULTIPART_FIELD_MAX_BYTES, MULTIPART_MAX_FIELDS, MULTIPART_MAX_FILES } from '../../src/uploads/multipart-files.js';

type Body = { payload: Buffer | string; headers: Record<string, string> };

/** One `metadata` (or other field) part with its own Content-Type (and a filename, as `curl -F metadata=@m.json` sends it), then one text file. */
function typedMetadataUpload(metadata: string, contentType: string, metadataFilename?: string, field = 'metadata'): Body {
  const boundary = 'rs-typed-metadata';
  const filename = metadataFilename === undefined ? '' : `; filename="${metadataFilename}"`;
  const payload = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"${filename}\r\nContent-Type: ${contentType}\r\n\r\n${metadata}\r\n`
    + `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="typed.txt"\r\nContent-Type: text/plain\r\n\r\nOsprey nests line the estuary.\r\n`
    + `--${boundary}--\r\n`,
  );
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const manyFiles = (count: number) => Array.from({ length: count }, (_, i) => ({ filename: `note-${i}.txt`, content: `Field note number ${i} about wading birds.`, contentType: 'text/plain' }));

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    // Every original goes to the file store, so "nothing kept" also looks at the disk.
    const { app, services, admin } = await adminTestApp(t, backend, { originalsInDatabaseMaxBytes: 0 });
    const collection = await createTestCollection(app, admin, { name: 'parts' });
    const opened = await app.inject({ method: 'POST', url: '/v1/collections/parts/uploads', headers: admin, payload: {} });
    t.equal(opened.statusCode, 201, opened.body);
    const session = opened.json().id as string;

    const paths = [
      ['POST', '/v1/collections/parts/documents'],
      ['POST', '/v1/collections/parts/documents/batch'],
      ['PUT', `/v1/collections/parts/uploads/${session}/files`],
    ] as const;
    const send = (method: string, url: string, body: Body) =>
      app.inject({ method: method as 'POST', url, headers: { ...admin, ...body.headers }, payload: body.payload });
    const nothingKept = async (t: Test, what: string) => {
      const documents = (await app.inject({ url: '/v1/collections/parts/documents', headers: admin })).json();
      t.equal(documents.total, 0, `${what}: no document`);
      t.same(await storedOriginals(services, collection.id), [], `${what}: no stored file`);
      const view = (await app.inject({ url: `/v1/collections/parts/uploads/${session}`, headers: admin })).json();
      t.same(view.files, [], `${what}: the upload session holds no file`);
    };

    await t.test('a content type busboy cannot start on is a 400 naming the boundary, on every upload path', async (t) => {
      const cases: Array<[string, number, RegExp, string]> = [
        ['multipart/form-data', 400, /multipart\/form-data needs a boundary parameter/, 'no parameters'],
        ['Multipart/Form-Data', 400, /needs a boundary parameter/, 'no parameters, capitals'],
        ['multipart/form-data; charset=utf-8', 400, /needs a boundary parameter/, 'a charset but no boundary'],
        ['multipart/form-data;;;', 400, /needs a boundary parameter/, 'empty parameters'],
        ['multipart/form-data; =abc', 400, /needs a boundary parameter/, 'a parameter without a name'],
        [`multipart/form-data; boundary=${'b'.repeat(300)}`, 400, /boundary is longer than 252 bytes/, 'a boundary of 300 characters'],
        // As before: an empty boundary finds no closing boundary, another multipart type is not read.
        ['multipart/form-data; boundary=', 400, /closing boundary/, 'an empty boundary'],
        ['multipart/mixed; boundary=abc', 415, /^Content-Type multipart\/mixed is not read by (POST|PUT) \/v1\/collections\/parts\/\S+: send multipart\/form-data$/, 'multipart/mixed'],
        // Fastify's own "Unsupported Media Type" did not say what to send.
        ['text/plain', 415, /^Content-Type text\/plain is not read by .*: send multipart\/form-data$/, 'text/plain'],
        ['application/x-www-form-urlencoded', 415, /: send multipart\/form-data$/, 'a urlencoded form'],
      ];
      for (const [method, url] of paths) {
        for (const [contentType, status, detail, what] of cases) {
          const response = await send(method, url, { payload: 'abc', headers: { 'content-type': contentType } });
          assertError(t, response, status, detail, `${method} ${url}: ${what}`);
          t.notMatch(response.json().code, /internal_error/, `${method} ${url}: ${what}: not a server error`);
        }
      }
      await nothingKept(t, 'bad content types');
    });

    await t.test('a charset busboy does not know is not an error', async (t) => {
      const body = multipartUpload([{ filename: 'charset.txt', content: 'Curlews call over the mudflats.', contentType: 'text/plain; charset=x-unknown' }]);
      const response = await send('POST', '/v1/collections/parts/documents', { payload: body.payload, headers: { 'content-type': `${body.headers['content-type']}; charset=x-unknown` } });
      t.equal(response.statusCode, 202, response.body.slice(0, 300));
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/parts/documents/${response.json().id}`, headers: admin })).statusCode, 204);
    });

    await t.test(`one file more than ${MULTIPART_MAX_FILES} is a 413 stating the limit, and nothing is kept`, async (t) => {
      const body = multipartUpload(manyFiles(MULTIPART_MAX_FILES + 1));
      for (const [method, url] of paths.slice(1)) {
        const response = await send(method, url, body);
        assertError(t, response, 413, `A request takes at most ${MULTIPART_MAX_FILES} files: send the rest in another request`, `${method} ${url}`);
        t.equal(response.json().code, 'payload_too_large');
        await nothingKept(t, `${method} ${url}`);
      }
    });

    await t.test(`one field more than ${MULTIPART_MAX_FIELDS} is a 413 stating the limit`, async (t) => {
      const fields = Object.fromEntries(Array.from({ length: MULTIPART_MAX_FIELDS + 1 }, (_, i) => [`field_${i}`, 'x']));
      for (const [method, url] of paths) {
        const response = await send(method, url, multipartUpload(manyFiles(1), fields));
        assertError(t, response, 413, `A request takes at most ${MULTIPART_MAX_FIELDS} fields besides its files`, `${method} ${url}`);
      }
      await nothingKept(t, 'too many fields');
    });

    await t.test('a metadata part sent as application/json is read as JSON; a bad or oversized one is a 400 saying so', async (t) => {
      const accepted = await send('POST', '/v1/collections/parts/documents', typedMetadataUpload('{"site":"estuary","count":3}', 'application/json'));
      t.equal(accepted.statusCode, 202, accepted.body.slice(0, 300));
      t.same(accepted.json().metadata, { site: 'estuary', count: 3 }, 'the metadata as sent');
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/parts/documents/${accepted.json().id}`, headers: admin })).statusCode, 204);

      const oversized = JSON.stringify({ note: 'x'.repeat(MULTIPART_FIELD_MAX_BYTES) });
      for (const [method, url] of paths) {
        assertError(t, await send(method, url, typedMetadataUpload('{"site":', 'application/json')), 400,
          /field sent as application\/json is not valid JSON/, `${method} ${url}: bad JSON`);
        assertError(t, await send(method, url, typedMetadataUpload(oversized, 'application/json; charset=utf-8')), 400,
          new RegExp(`larger than ${MULTIPART_FIELD_MAX_BYTES} bytes`), `${method} ${url}: over the field limit`);
      }
      await nothingKept(t, 'typed metadata refused');
    });

    await t.test('a metadata part sent as a file (curl -F metadata=@m.json, a Blob in FormData) is read as the field', async (t) => {
      for (const contentType of ['application/json', 'application/octet-stream']) {
        const accepted = await send('POST', '/v1/collections/parts/documents', typedMetadataUpload('{"site":"dunes"}', contentType, 'm.json'));
        t.equal(accepted.statusCode, 202, accepted.body.slice(0, 300));
        t.same(accepted.json().metadata, { site: 'dunes' }, `${contentType}: the metadata as sent`);
        t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/parts/documents/${accepted.json().id}`, headers: admin })).statusCode, 204);
      }
      const batch = await send('POST', '/v1/collections/parts/documents/batch', typedMetadataUpload('{"site":"spit"}', 'application/json', 'm.json'));
      t.equal(batch.statusCode, 202, batch.body.slice(0, 300));
      t.same(batch.json().documents.map((document: { metadata: unknown }) => document.metadata), [{ site: 'spit' }]);
      for (const document of batch.json().documents) await app.inject({ method: 'DELETE', url: `/v1/collections/parts/documents/${document.id}`, headers: admin });

      const oversized = JSON.stringify({ note: 'x'.repeat(MULTIPART_FIELD_MAX_BYTES) });
      for (const [method, url] of paths) {
        assertError(t, await send(method, url, typedMetadataUpload(oversized, 'application/json', 'm.json')), 413,
          `Field "metadata" is larger than ${MULTIPART_FIELD_MAX_BYTES} bytes`, `${method} ${url}: over the field limit`);
        assertError(t, await send(method, url, typedMetadataUpload('{"site":', 'application/json', 'm.json')), 400, /metadata/, `${method} ${url}: bad JSON`);
      }
      await nothingKept(t, 'metadata files refused');
    });

    await t.test('an on_duplicate part sent as a file is read as the field too', async (t) => {
      const first = await send('POST', '/v1/collections/parts/documents', typedMetadataUpload('{}', 'application/json', 'm.json'));
      t.equal(first.statusCode, 202, first.body.slice(0, 300));
      // It was "Send exactly one file, in the "file" part", though one file was sent.
      const replaced = await send('POST', '/v1/collections/parts/documents', typedMetadataUpload('replace', 'text/plain', 'mode.txt', 'on_duplicate'));
      t.equal(replaced.statusCode, 202, replaced.body.slice(0, 300));
      t.same(replaced.json().replaced_document_ids, [first.json().id], 'read as on_duplicate=replace');
      await app.inject({ method: 'DELETE', url: `/v1/collections/parts/documents/${replaced.json().id}`, headers: admin });
      await nothingKept(t, 'after the replacement is deleted');
    });
  });
}
