/**
 * Original files in an S3-compatible bucket (s3rver in this process on 127.0.0.1): the same store
 * checks run against the local store and the S3 store, then the HTTP API with FILE_STORE=s3 —
 * upload, batch, session, ingest, reprocess, and deletions that remove the objects.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import t from 'tap';
import { loadConfig, type S3StoreConfig } from '../../src/config.js';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';
import { storedOriginals } from '../support/stored-originals.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { localAndS3Stores, startLocalS3 } from './s3-server.js';

/** `megabytes` of deterministic bytes, produced a chunk at a time. */
function generated(megabytes: number): { stream: () => Readable; sha256: string; size: number } {
  const chunk = (index: number) => Buffer.alloc(1024 * 1024, `block ${index} `);
  const hash = createHash('sha256');
  for (let index = 0; index < megabytes; index++) hash.update(chunk(index));
  return {
    stream: () => Readable.from((function* () {
      for (let index = 0; index < megabytes; index++) yield chunk(index);
    })()),
    sha256: hash.digest('hex'),
    size: megabytes * 1024 * 1024,
  };
}

async function objectKeys(config: S3StoreConfig): Promise<string[]> {
  const client = new S3Client({
    region: config.region, endpoint: config.endpoint, forcePathStyle: true,
    credentials: { accessKeyId: config.accessKeyId!, secretAccessKey: config.secretAccessKey! },
  });
  try {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: config.bucket }));
    return (listed.Contents ?? []).map((object) => object.Key!).sort();
  } finally {
    client.destroy();
  }
}

t.test('configuration: FILE_STORE and the S3 settings', async (t) => {
  const defaults = loadConfig({});
  t.equal(defaults.fileStore, 'local');
  t.match(defaults.s3, { region: 'us-east-1', forcePathStyle: false, prefix: '' });
  const s3 = loadConfig({ FILE_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_FORCE_PATH_STYLE: 'true', S3_PREFIX: 'rs/' });
  t.match(s3, { fileStore: 's3', s3: { bucket: 'b', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true, prefix: 'rs/' } });
  t.throws(() => loadConfig({ FILE_STORE: 'gcs' }), /FILE_STORE must be "local" or "s3"/);
  t.throws(() => loadConfig({ FILE_STORE: 's3' }), /needs S3_BUCKET/);
  t.equal(defaults.originalsInDatabaseMaxBytes, 65536, 'small originals go to the database by default');
  t.equal(loadConfig({ ORIGINALS_IN_DATABASE_MAX_BYTES: '0' }).originalsInDatabaseMaxBytes, 0, 'or none');
  t.throws(() => loadConfig({ ORIGINALS_IN_DATABASE_MAX_BYTES: '-1' }), /ORIGINALS_IN_DATABASE_MAX_BYTES/);
});

t.test('file store behaviour, local and S3', async (t) => {
  const { s3, root, stores } = await localAndS3Stores(t, 'store-checks', 'checks/');
  for (const [name, store] of stores) {
    await t.test(name, async (t) => {
      await store.write('c1/small', Readable.from([Buffer.from('hello '), Buffer.from('world')]));
      t.equal((await store.read('c1/small')).toString(), 'hello world');
      t.equal(await store.size('c1/small'), 11);
      const chunks: Buffer[] = [];
      for await (const chunk of await store.openRead('c1/small')) chunks.push(Buffer.from(chunk));
      t.equal(Buffer.concat(chunks).toString(), 'hello world', 'openRead streams the bytes');

      // Larger than two S3 parts (8 MiB each): the multipart path, one part in memory at a time.
      const big = generated(17);
      await store.write('c1/big', big.stream());
      t.equal(await store.size('c1/big'), big.size);
      t.equal(createHash('sha256').update(await store.read('c1/big')).digest('hex'), big.sha256, 'the large file reads back intact');

      await store.write('c1/whole', Buffer.from('bytes given whole'));
      t.equal((await store.read('c1/whole')).toString(), 'bytes given whole', 'a Buffer is stored as it is');

      await store.write('c1/elements/d1/0', Buffer.from('png'));
      await store.write('c1/elements/d1/1', Readable.from([Buffer.from('jpg')]));
      await store.remove('c1/elements/d1');
      await t.rejects(store.read('c1/elements/d1/0'), 'a prefix removes every key below it');
      t.equal((await store.read('c1/small')).toString(), 'hello world', 'and nothing beside it');
      await store.remove('c1/small');
      await t.rejects(store.read('c1/small'), 'a removed key is gone');
      await t.rejects(store.openRead('c1/missing'), 'opening a missing key rejects');
      await store.remove('c1/missing');

      let sent = 0;
      const failing = new Readable({
        read() {
          if (sent++ < 3) this.push(Buffer.alloc(4 * 1024 * 1024, 1));
          else this.destroy(new Error('client went away'));
        },
      });
      await t.rejects(store.write('c1/broken', failing), /client went away/, 'a source that fails fails the write');

      for (const key of ['../escape', 'c1/../../escape', 'c1/./x', '/abs', 'c1//x', '', 'c1/a b']) {
        await t.rejects(store.write(key, Readable.from([Buffer.from('x')])), /unsafe storage key/, `refuses key ${JSON.stringify(key)}`);
      }
      await store.remove('c1');
      await t.rejects(store.read('c1/big'));
    });
  }
  t.same(await objectKeys(s3.config), [], 'the bucket is empty again (no aborted multipart leftovers as objects)');
  t.notOk(existsSync(path.join(root, '..', 'escape')), 'nothing escaped the local root');
});

for (const backend of testBackends()) {
  t.test(`${backend}: the API with FILE_STORE=s3`, async (t) => {
    const s3 = await startLocalS3('rs-files', 'svc');
    // Every original in the bucket (by default, those under 64 KB are kept in the database: below).
    const ctx = await buildTestApp(backend, { fileStore: 's3', s3: s3.config, originalsInDatabaseMaxBytes: 0 });
    t.teardown(async () => {
      await ctx.close();
      await s3.close();
    });
    const { app } = ctx;
    const admin = { cookie: await setupAdmin(app) };
    const created = await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'bucketed' } });
    const collectionId = created.json().id as string;
    const objects = async () => (await objectKeys(s3.config)).filter((key) => key.startsWith(`svc/${collectionId}/`));
    const send = (url: string, files: Array<{ filename: string; content: string }>, method: 'POST' | 'PUT' = 'POST') => {
      const body = multipartUpload(files.map((file) => ({ ...file, contentType: 'text/plain' })));
      return app.inject({ method, url, headers: { ...admin, ...body.headers }, payload: body.payload });
    };

    const single = await send('/v1/collections/bucketed/documents', [{ filename: 'tides.txt', content: 'Tide tables predict the harbour depth at dawn.' }]);
    t.equal(single.statusCode, 202, single.body.slice(0, 200));
    t.equal((await objects()).length, 1, 'the original is an object in the bucket, under the prefix');
    t.notOk(existsSync(path.join(ctx.services.config.dataDir, 'files')), 'nothing under DATA_DIR/files');

    const batch = await send('/v1/collections/bucketed/documents/batch', [
      { filename: 'cranes.txt', content: 'Cranes unload containers onto the quay.' },
      { filename: 'pilots.txt', content: 'Pilots guide ships through the narrow channel.' },
    ]);
    t.equal(batch.statusCode, 202);
    t.equal((await objects()).length, 3);

    const session = (await app.inject({ method: 'POST', url: '/v1/collections/bucketed/uploads', headers: admin })).json();
    t.equal((await send(`/v1/collections/bucketed/uploads/${session.id}/files`, [{ filename: 'draft.txt', content: 'A draft that is never completed.' }], 'PUT')).statusCode, 200);
    t.equal((await objects()).length, 4);
    t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/bucketed/uploads/${session.id}`, headers: admin })).statusCode, 204);
    t.equal((await objects()).length, 3, 'a cancelled session\'s objects are removed');

    const documents = await waitForIngestion(app, 'bucketed', admin);
    t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready'], 'ingestion reads the originals from the bucket');
    const hits = (await app.inject({ method: 'POST', url: '/v1/collections/bucketed/query', headers: admin, payload: { query: 'harbour depth', search_mode: 'keyword' } })).json();
    t.equal(hits.results[0]?.document_id, single.json().id);

    const reprocessed = await app.inject({ method: 'POST', url: `/v1/collections/bucketed/documents/${single.json().id}/reprocess`, headers: admin });
    t.equal(reprocessed.statusCode, 202);
    t.same((await waitForIngestion(app, 'bucketed', admin)).map((document) => document.status), ['ready', 'ready', 'ready'], 'reprocessing reads from the bucket again');

    t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/bucketed/documents/${single.json().id}`, headers: admin })).statusCode, 204);
    t.equal((await objects()).length, 2, 'deleting a document removes its object');
    t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/bucketed/batches/${batch.json().batch_id}`, headers: admin })).statusCode, 204);
    t.same(await objects(), [], 'deleting a batch removes its objects');

    await send('/v1/collections/bucketed/documents/batch', [
      { filename: 'gulls.txt', content: 'Gulls follow the ferry out of the harbour.' },
      { filename: 'buoys.txt', content: 'Buoys mark the edge of the channel.' },
    ]);
    t.equal((await objects()).length, 2);
    await waitForIngestion(app, 'bucketed', admin);
    const truncated = await app.inject({ method: 'POST', url: '/v1/collections/bucketed/truncate', headers: admin });
    t.same(truncated.json(), { deleted_documents: 2 });
    t.same(await objects(), [], 'a truncate removes its documents\' objects');

    await send('/v1/collections/bucketed/documents', [{ filename: 'last.txt', content: 'The last file before the collection goes.' }]);
    t.equal((await objects()).length, 1);
    t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/bucketed', headers: admin })).statusCode, 204);
    t.same(await objects(), [], 'deleting the collection removes every object under it');
  });

  t.test(`${backend}: FILE_STORE=s3 with the default ORIGINALS_IN_DATABASE_MAX_BYTES`, async (t) => {
    const s3 = await startLocalS3('rs-files', 'svc');
    const ctx = await buildTestApp(backend, { fileStore: 's3', s3: s3.config });
    t.teardown(async () => {
      await ctx.close();
      await s3.close();
    });
    const { app } = ctx;
    const admin = { cookie: await setupAdmin(app) };
    const collectionId = (await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'mixed' } })).json().id as string;
    const objects = async () => (await objectKeys(s3.config)).filter((key) => key.startsWith(`svc/${collectionId}/`));
    const upload = (filename: string, content: string) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
      return app.inject({ method: 'POST', url: '/v1/collections/mixed/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
    };
    const small = await upload('small.txt', 'Tide tables predict the harbour depth at dawn.');
    t.equal(small.statusCode, 202);
    t.same(await objects(), [], 'a small original is not put in the bucket');
    t.same(await storedOriginals(ctx.services, collectionId), [`database:${small.json().id}`], 'it is kept in the database');
    t.equal((await upload('large.txt', 'Cranes unload containers onto the quay. '.repeat(2000))).statusCode, 202);
    t.equal((await objects()).length, 1, 'one over 64 KB is an object in the bucket');
    const documents = await waitForIngestion(app, 'mixed', admin);
    t.same(documents.map((document) => document.status), ['ready', 'ready'], 'both are ingested');
    t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/mixed/documents/${small.json().id}`, headers: admin })).statusCode, 204);
    t.same(await storedOriginals(ctx.services, collectionId), [], 'deleting the small document removes its original row');
  });
}

t.test('pglite: a bucket that cannot be reached', async (t) => {
  const s3 = await startLocalS3('rs-files', 'svc');
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(s3.config.endpoint!).port) });
  const ctx = await buildTestApp('pglite', { fileStore: 's3', s3: { ...s3.config, endpoint: `http://127.0.0.1:${proxy.port}` }, originalsInDatabaseMaxBytes: 0 }, { startWorkers: false });
  t.teardown(async () => {
    await ctx.close();
    await proxy.close();
    await s3.close();
  });
  const { app } = ctx;
  const admin = { cookie: await setupAdmin(app) };
  await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'cut-off' } });
  const upload = (filename: string) => {
    const body = multipartUpload([{ filename, content: `Lock keepers of ${filename} open the gates at high water.`, contentType: 'text/plain' }]);
    return app.inject({ method: 'POST', url: '/v1/collections/cut-off/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
  };
  const stored = await upload('first.txt');
  t.equal(stored.statusCode, 202);

  await proxy.cut();
  const refused = await upload('second.txt');
  assertError(t, refused, 503, /^The file store \(S3 bucket rs-files\) is unavailable: .*try again shortly$/, 'an upload while the bucket is away');
  t.equal(refused.json().code, 'unavailable');
  t.equal((await app.inject({ url: '/v1/collections/cut-off/documents', headers: admin })).json().total, 1, 'and it left no document behind');

  await ctx.services.start();
  const document = `/v1/collections/cut-off/documents/${stored.json().id}`;
  for (let waited = 0; ; waited += 50) {
    const state = (await app.inject({ url: document, headers: admin })).json();
    if (state.status === 'failed') t.fail(`the document failed: ${state.error}`);
    if (state.status !== 'processing' && /could not read the original: The file store .* is unavailable.*\(will retry\)/.test(state.progress?.message ?? '')) break;
    if (waited > 20_000) throw new Error(`the document never waited for a retry: ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.pass('a document whose original cannot be read from the bucket waits for a retry, saying why');
  await proxy.restore();
  const documents = await waitForIngestion(app, 'cut-off', admin, 30_000);
  t.same(documents.map((entry) => entry.status), ['ready'], 'and is ingested once the bucket is back');
});
