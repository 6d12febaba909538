/**
 * Upload sessions through HTTP: open → files → complete (one batch of documents) or cancel, the
 * state machine's 409s, refused files (415, 413, empty, none) leaving nothing behind, and
 * duplicates across a session and the collection.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { assertError } from '../support/assertions.js';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';

const LIMIT = 64 * 1024;
const paragraph = (topic: string) => `${topic} are described here in a few plain sentences. They matter to the people who study ${topic}.`;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend, { uploadLimitBytes: LIMIT });
    t.teardown(() => ctx.close());
    const { app } = ctx;
    const admin = { cookie: await setupAdmin(app) };
    const created = await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'sessions' } });
    t.equal(created.statusCode, 201);
    const collectionId = created.json().id as string;
    const storedFiles = () => {
      const dir = path.join(ctx.services.config.dataDir, 'files', collectionId);
      return existsSync(dir) ? readdirSync(dir) : [];
    };
    const base = '/v1/collections/sessions/uploads';
    // Each helper acts on the sessions of `sessions` (a collection's uploads path), the collection "sessions" unless told.
    const open = async (payload?: Record<string, unknown>, sessions = base) => {
      const response = await app.inject({ method: 'POST', url: sessions, headers: admin, ...(payload ? { payload } : {}) });
      t.equal(response.statusCode, 201, response.body.slice(0, 200));
      return response.json();
    };
    const put = (id: string, files: Array<{ filename: string; content: string | Buffer; contentType?: string; field?: string }>, sessions = base) => {
      const body = multipartUpload(files.map((file) => ({ contentType: 'text/plain', ...file })));
      return app.inject({ method: 'PUT', url: `${sessions}/${id}/files`, headers: { ...admin, ...body.headers }, payload: body.payload });
    };
    const get = async (id: string, sessions = base) => (await app.inject({ url: `${sessions}/${id}`, headers: admin })).json();
    const complete = (id: string, sessions = base) => app.inject({ method: 'POST', url: `${sessions}/${id}/complete`, headers: admin });
    const cancel = (id: string) => app.inject({ method: 'DELETE', url: `${base}/${id}`, headers: admin });

    await t.test('open, add files in several requests, complete: one batch of documents', async (t) => {
      const session = await open({ metadata: { source: 'session' } });
      t.match(session, { id: /^[0-9a-f-]{36}$/, status: 'open', files: [], collection: 'sessions', metadata: { source: 'session' }, on_duplicate: 'skip', batch_id: null });
      const first = await put(session.id, [{ filename: 'otters.txt', content: paragraph('Otters') }]);
      t.equal(first.statusCode, 200, first.body.slice(0, 200));
      t.same(first.json().files.map((file: any) => file.filename), ['otters.txt']);
      const second = await put(session.id, [
        { filename: 'herons.md', content: `# Herons\n\n${paragraph('Herons')}`, contentType: 'text/markdown' },
        { filename: '../../kingfishers.txt', content: paragraph('Kingfishers') },
      ]);
      t.equal(second.statusCode, 200);
      t.match(second.json(), { file_count: 3 }, 'the answer counts every file of the session');
      t.same(second.json().files.map((file: any) => file.filename), ['herons.md', 'kingfishers.txt'], 'and lists the files this request added');
      const view = await get(session.id);
      t.match(view, { status: 'open', file_count: 3 });
      t.same(view.files.map((file: any) => file.filename), ['otters.txt', 'herons.md', 'kingfishers.txt'], 'in upload order, display names only');
      t.ok(view.files.every((file: any) => file.document_id === null && /^[0-9a-f]{64}$/.test(file.sha256)));
      t.equal(view.total_bytes, view.files.reduce((sum: number, file: any) => sum + file.size_bytes, 0));
      const pageOf = async (query: string) => {
        const response = await app.inject({ url: `${base}/${session.id}?${query}`, headers: admin });
        t.equal(response.statusCode, 200, query);
        return response.json();
      };
      const firstPage = await pageOf('limit=2');
      t.same(firstPage.files.map((file: any) => file.filename), ['otters.txt', 'herons.md'], 'limit pages the files');
      t.match(firstPage, { file_count: 3, total_bytes: view.total_bytes }, 'the totals are of every file, not of the page');
      t.same((await pageOf('limit=2&offset=2')).files.map((file: any) => file.filename), ['kingfishers.txt'], 'offset');
      t.same((await pageOf('offset=3')).files, [], 'past the end');
      for (const query of ['limit=0', 'limit=501', 'offset=-1', 'limit=two']) {
        assertError(t, await app.inject({ url: `${base}/${session.id}?${query}`, headers: admin }), 400, /limit|offset/, query);
      }
      t.equal(storedFiles().length, 3, 'files are stored as they arrive');
      const listed = (await app.inject({ url: '/v1/collections/sessions/documents', headers: admin })).json();
      t.equal(listed.total, 0, 'no document before completion');

      const completed = await complete(session.id);
      t.equal(completed.statusCode, 202, completed.body.slice(0, 300));
      const body = completed.json();
      t.match(body, { id: session.id, status: 'completing', batch_id: /^[0-9a-f-]{36}$/ });
      t.same(body.documents.map((document: any) => [document.filename, document.status, document.metadata.source]), [
        ['otters.txt', 'pending', 'session'], ['herons.md', 'pending', 'session'], ['kingfishers.txt', 'pending', 'session'],
      ]);
      t.ok(body.documents.every((document: any) => document.batch_id === body.batch_id));
      t.same(body.files.map((file: any) => file.document_id), body.documents.map((document: any) => document.id), 'each file names its document');
      t.equal(storedFiles().length, 3, 'the files became the documents\' originals, not copies');

      await waitForIngestion(app, 'sessions', admin);
      const done = await get(session.id);
      t.equal(done.status, 'completed', 'completed once every document is ready or failed');
      t.ok(Date.parse(done.completed_at));
      const batch = (await app.inject({ url: `/v1/collections/sessions/batches/${body.batch_id}`, headers: admin })).json();
      t.match(batch, { source: 'session', total: 3, done: true, by_status: { ready: 3 } });

      assertError(t, await complete(session.id), 409, /completed/, 'complete twice');
      assertError(t, await put(session.id, [{ filename: 'late.txt', content: 'late' }]), 409, /completed.*only an open session/, 'files after completion');
      assertError(t, await cancel(session.id), 409, /completed/, 'cancel after completion');
      t.equal(storedFiles().length, 3, 'the refused late file was not stored');
    });

    await t.test('refused files leave the session as it was', async (t) => {
      const session = await open();
      t.equal((await put(session.id, [{ filename: 'keep.txt', content: paragraph('Badgers') }])).statusCode, 200);
      const before = storedFiles().length;
      const check = async (what: string) => {
        t.same((await get(session.id)).files.map((file: any) => file.filename), ['keep.txt'], `${what}: the session still holds one file`);
        t.equal(storedFiles().length, before, `${what}: nothing more stored`);
      };
      assertError(t, await put(session.id, [{ filename: 'ok.txt', content: paragraph('Voles') }, { filename: 'x.exe', content: Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03, 0x00, 0x00, 0x00]), contentType: 'application/x-msdownload' }]), 415, /x\.exe/, 'an unsupported file among good ones');
      await check('unsupported');
      assertError(t, await put(session.id, [{ filename: 'big.txt', content: 'y'.repeat(LIMIT + 1) }]), 413, new RegExp(String(LIMIT)), 'over the limit');
      await check('over the limit');
      assertError(t, await put(session.id, [{ filename: 'empty.txt', content: '' }]), 400, /empty/, 'an empty file');
      await check('empty');
      assertError(t, await put(session.id, []), 400, /No files/, 'no files');
      assertError(t, await put(session.id, [{ filename: 'a.txt', content: 'text', field: 'upload' }]), 400, /"file"/, 'another part name');
      assertError(t, await app.inject({ method: 'PUT', url: `${base}/${session.id}/files`, headers: admin, payload: { file: 'x' } }), 415, /multipart/, 'JSON body');
      const withMetadata = multipartUpload([{ filename: 'tagged.txt', content: paragraph('Otters'), contentType: 'text/plain' }], { metadata: '{"team":"river"}' });
      assertError(t, await app.inject({ method: 'PUT', url: `${base}/${session.id}/files`, headers: { ...admin, ...withMetadata.headers }, payload: withMetadata.payload }),
        400, /^Field "metadata" is not taken here: a session's metadata and on_duplicate are set when it is opened/, 'metadata beside the files (it was ignored)');
      await check('malformed requests');
      t.equal((await cancel(session.id)).statusCode, 204);
    });

    await t.test('cancel removes the stored files; wrong-state transitions are 409', async (t) => {
      const before = storedFiles().length;
      const session = await open();
      await put(session.id, [{ filename: 'a.txt', content: paragraph('Moles') }, { filename: 'b.txt', content: paragraph('Shrews') }]);
      t.equal(storedFiles().length, before + 2);
      const cancelled = await cancel(session.id);
      t.equal(cancelled.statusCode, 204);
      t.equal(cancelled.body, '');
      t.equal(storedFiles().length, before, 'stored files removed');
      t.match(await get(session.id), { status: 'cancelled', files: [], file_count: 0 });
      assertError(t, await complete(session.id), 409, /cancelled/, 'complete after cancel');
      assertError(t, await put(session.id, [{ filename: 'c.txt', content: 'more' }]), 409, /cancelled/, 'files after cancel');
      assertError(t, await cancel(session.id), 409, /cancelled/, 'cancel twice');
      t.equal(storedFiles().length, before);

      const empty = await open();
      assertError(t, await complete(empty.id), 400, /no files/, 'complete an empty session');
      t.equal((await get(empty.id)).status, 'open', 'an empty session stays open');
    });

    await t.test('a completion the metadata_schema refuses since the session opened: 400, the session open with its files', async (t) => {
      t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'schema-sessions' } })).statusCode, 201);
      const sessions = '/v1/collections/schema-sessions/uploads';
      const { id } = await open({ metadata: { team: 'a' } }, sessions);
      t.equal((await put(id, [{ filename: 'voles.txt', content: paragraph('Voles') }], sessions)).statusCode, 200);
      const schema = (metadata_schema: unknown) => app.inject({ method: 'PATCH', url: '/v1/collections/schema-sessions', headers: admin, payload: { metadata_schema } });
      t.equal((await schema({ type: 'object', required: ['owner'] })).statusCode, 200);

      assertError(t, await complete(id, sessions), 400, /owner/, 'complete');
      t.match(await get(id, sessions), { status: 'open', file_count: 1, batch_id: null }, 'open again, its file kept');
      t.equal((await app.inject({ url: '/v1/collections/schema-sessions/documents', headers: admin })).json().total, 0, 'no document');

      t.equal((await schema(null)).statusCode, 200);
      const completed = await complete(id, sessions);
      t.equal(completed.statusCode, 202, completed.body);
      t.equal((await app.inject({ url: '/v1/collections/schema-sessions/documents', headers: admin })).json().total, 1, 'completed once the schema allows it');
    });

    await t.test('bad session requests: 400 and 404, nothing created', async (t) => {
      const count = async () => Number((await ctx.services.sql<{ count: string | number }>('select count(*) as count from upload_sessions'))[0]!.count);
      const sessions = await count();
      assertError(t, await app.inject({ method: 'POST', url: base, headers: admin, payload: { metadata: [1] } }), 400, /metadata/, 'metadata not an object');
      assertError(t, await app.inject({ method: 'POST', url: base, headers: admin, payload: { on_duplicate: 'merge' } }), 400, /^body\.on_duplicate must be one of "skip", "replace", "keep"$/, 'unknown on_duplicate, said once with the values it takes');
      assertError(t, await app.inject({ method: 'POST', url: base, headers: admin, payload: { files: [] } }), 400, /files/, 'unknown field');
      assertError(t, await app.inject({ method: 'POST', url: base, headers: { ...admin, 'content-type': 'application/json' }, payload: 'null' }), 400, /^body must be object/, 'a JSON null is a body, and not an object (it opened a session)');
      await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'tenanted', tenant_field: 'org' } });
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/tenanted/uploads', headers: admin, payload: {} }), 400, /\borg\b/, 'tenant field missing');
      assertError(t, await app.inject({ method: 'POST', url: '/v1/collections/nope/uploads', headers: admin, payload: {} }), 404, /nope/, 'unknown collection');
      t.equal(await count(), sessions, 'no session created');

      const unknown = '00000000-0000-4000-8000-000000000000';
      assertError(t, await app.inject({ url: `${base}/${unknown}`, headers: admin }), 404, new RegExp(unknown), 'get');
      assertError(t, await put(unknown, [{ filename: 'a.txt', content: 'x' }]), 404, undefined, 'files');
      assertError(t, await complete(unknown), 404, undefined, 'complete');
      assertError(t, await cancel(unknown), 404, undefined, 'cancel');
      assertError(t, await app.inject({ url: `${base}/not-a-uuid`, headers: admin }), 400, undefined, 'not a uuid');
      const tenanted = await app.inject({ method: 'POST', url: '/v1/collections/tenanted/uploads', headers: admin, payload: { metadata: { org: 'acme' } } });
      t.equal(tenanted.statusCode, 201);
      assertError(t, await app.inject({ url: `${base}/${tenanted.json().id}`, headers: admin }), 404, undefined, 'a session of another collection');
    });

    await t.test('duplicates: skip against the collection and within the session; replace', async (t) => {
      const existing = (await get((await open()).id));
      t.equal(existing.status, 'open');
      const skipping = await open();
      await put(skipping.id, [
        { filename: 'otters-again.txt', content: paragraph('Otters') },
        { filename: 'newts.txt', content: paragraph('Newts') },
        { filename: 'newts-copy.txt', content: paragraph('Newts') },
      ]);
      const completed = (await complete(skipping.id)).json();
      t.same(completed.documents.map((document: any) => [document.filename, document.duplicate]), [
        ['otters.txt', true], ['newts.txt', false], ['newts.txt', true],
      ], 'an existing copy and an in-session copy are skipped');
      await waitForIngestion(app, 'sessions', admin);
      const total = (await app.inject({ url: '/v1/collections/sessions/documents', headers: admin })).json().total;
      t.equal(total, 4, 'one new document only');

      const replacing = await open({ on_duplicate: 'replace', metadata: { v: 2 } });
      await put(replacing.id, [{ filename: 'newts-v2.txt', content: paragraph('Newts') }]);
      const replaced = (await complete(replacing.id)).json();
      t.match(replaced.documents[0], { filename: 'newts-v2.txt', duplicate: false, metadata: { v: 2 }, replaced_document_ids: [completed.documents[1].id] });
      await waitForIngestion(app, 'sessions', admin);
      t.equal((await app.inject({ url: '/v1/collections/sessions/documents', headers: admin })).json().total, 4);
    });

    await t.test('the collection deleted (by another replica) while files stream in: 404, not "the session is open"', async (t) => {
      const doomed = await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'doomed-sessions' } });
      t.equal(doomed.statusCode, 201);
      const session = (await app.inject({ method: 'POST', url: '/v1/collections/doomed-sessions/uploads', headers: admin })).json();
      const { files } = ctx.services;
      const write = files.write;
      files.write = async (key, source) => {
        await write.call(files, key, source);
        // Another replica's delete: straight to the database, this process is not told of it.
        await ctx.services.sql('delete from collections where id = ?', [doomed.json().id]);
      };
      t.teardown(() => { files.write = write; });
      const body = multipartUpload([{ filename: 'late.txt', content: paragraph('Voles'), contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'PUT', url: `/v1/collections/doomed-sessions/uploads/${session.id}/files`, headers: { ...admin, ...body.headers }, payload: body.payload });
      files.write = write;
      assertError(t, response, 404, new RegExp(`^Upload session ${session.id} not found: it was deleted \\(its collection truncated or deleted\\)`), 'files');
      const [left] = await ctx.services.sql<{ count: string | number }>('select count(*) as count from upload_session_files where session_id = ?', [session.id]);
      t.equal(Number(left!.count), 0, 'no file row');
    });

    await t.test('a completion whose session a truncate deletes after it was found: 404, not "has no files"', async (t) => {
      const session = await open();
      t.equal((await put(session.id, [{ filename: 'shrews.txt', content: paragraph('Shrews') }])).statusCode, 200);
      const { services } = ctx;
      const sql = services.sql;
      t.teardown(() => Object.assign(services, { sql }));
      // The completion reads the session's files through the services' runner: the truncate comes first.
      const truncatingFirst = Object.assign(async (query: string, params?: unknown[]) => {
        if (query.includes('from upload_session_files where session_id')) {
          Object.assign(services, { sql });
          t.equal((await app.inject({ method: 'POST', url: '/v1/collections/sessions/truncate', headers: admin })).statusCode, 200);
        }
        return sql(query, params);
      }, sql);
      Object.assign(services, { sql: truncatingFirst });
      const response = await complete(session.id);
      Object.assign(services, { sql });
      assertError(t, response, 404, new RegExp(`^Upload session ${session.id} not found: it was deleted \\(its collection truncated or deleted\\)`));
      t.equal((await app.inject({ url: `${base}/${session.id}`, headers: admin })).statusCode, 404, 'the session is gone');
    });
  });
}
