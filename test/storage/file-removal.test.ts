/**
 * Removing many files at once, as a truncate or a batch deletion does (FileStore.removeMany): both
 * stores remove the keys and the prefixes asked and nothing beside them, and S3 does it in a request
 * per 1,000 objects. It took two requests a document (a DeleteObject, then a listing of the
 * document's picture prefix), whether or not the document had any picture, and two more for an
 * original in the bucket: at least 100,000 requests for a truncate of 50,000 documents. Keys a bucket refuses to delete fail the removal (they were ignored).
 */
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import t from 'tap';
import type { S3StoreConfig } from '../../src/config.js';
import type { FileStore } from '../../src/storage/file-store.js';
import { S3FileStore } from '../../src/storage/s3-file-store.js';
import { localAndS3Stores, startLocalS3Process } from './s3-server.js';

/** An S3 client for the local server that records the name of every command it sends in `commands`. */
function countingClient(config: S3StoreConfig, commands: string[]): S3Client {
  const client = new S3Client({
    region: config.region, endpoint: config.endpoint, forcePathStyle: true,
    credentials: { accessKeyId: config.accessKeyId!, secretAccessKey: config.secretAccessKey! },
    requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
  });
  client.middlewareStack.add((next, context) => async (args) => {
    commands.push(context.commandName ?? 'unknown');
    return next(args);
  }, { step: 'initialize', name: 'countCommands' });
  return client;
}

async function exists(store: FileStore, key: string): Promise<boolean> {
  return store.size(key).then(() => true, () => false);
}

const documents = Array.from({ length: 40 }, (_, index) => `doc-${String(index).padStart(2, '0')}`);

/** What a collection of 40 documents leaves: pictures for some of them, originals, and files that must stay. */
async function storeFiles(store: FileStore): Promise<void> {
  for (const [index, document] of documents.entries()) {
    if (index % 3 === 0) await store.write(`c1/elements/${document}/0`, Buffer.from('png'));
    if (index % 6 === 0) await store.write(`c1/elements/${document}/1`, Buffer.from('jpg'));
  }
  await store.write('c1/original-a', Buffer.from('a'));
  await store.write('c1/original-b', Buffer.from('b'));
  await store.write('c1/racing-upload', Buffer.from('an upload whose document outlives the removal'));
  await store.write('c1/elements/kept-doc/0', Buffer.from('a picture of a document not removed'));
  await store.write('c1/elements/doc-000/0', Buffer.from('a document whose id starts like a removed one'));
  await store.write('c2/elements/doc-00/0', Buffer.from('another collection\'s document of the same id'));
  await store.write('c1/few/doc-x/0', Buffer.from('under a parent with few prefixes'));
}

t.test('removeMany removes the keys and prefixes asked, and nothing beside them', async (t) => {
  const commands: string[] = [];
  const { s3, stores } = await localAndS3Stores(t, 'removals', 'svc/', (config) => countingClient(config, commands));
  for (const [name, store] of stores) {
    await t.test(name, async (t) => {
      await storeFiles(store);
      commands.length = 0;
      await store.removeMany(['c1/original-a', 'c1/original-b', 'c1/never-stored'], [
        ...documents.map((document) => `c1/elements/${document}`),
        'c1/elements/no-such-doc',
        'c1/few/doc-x',
        'c1/few/doc-y',
      ]);
      const sent = commands.splice(0).sort();
      for (const [index, document] of documents.entries()) {
        if (index % 3 === 0) t.notOk(await exists(store, `c1/elements/${document}/0`), `${document}'s picture is gone`);
      }
      t.notOk(await exists(store, 'c1/elements/doc-00/1'), 'a second picture too');
      t.notOk(await exists(store, 'c1/original-a'));
      t.notOk(await exists(store, 'c1/original-b'));
      t.notOk(await exists(store, 'c1/few/doc-x/0'), 'a prefix among few under its parent');
      for (const kept of ['c1/racing-upload', 'c1/elements/kept-doc/0', 'c1/elements/doc-000/0', 'c2/elements/doc-00/0']) {
        t.ok(await exists(store, kept), `${kept} is kept`);
      }
      if (name === 's3') {
        // The keys in one DeleteObjects; the 40 documents' pictures by one listing of their parent
        // and one DeleteObjects; each of the 2 prefixes under c1/few by a listing and, where it
        // found objects, a DeleteObjects.
        t.same(sent, ['DeleteObjectsCommand', 'DeleteObjectsCommand', 'DeleteObjectsCommand', 'ListObjectsV2Command', 'ListObjectsV2Command', 'ListObjectsV2Command'], 'six requests, not two a key and prefix (92)');
      }
      await store.write('c1/elements/doc-00/0', Buffer.from('png again'));
      t.equal((await store.read('c1/elements/doc-00/0')).toString(), 'png again', 'a removed document\'s pictures can be written again (its directory is made anew)');
      await store.removeMany([], []);
      await store.remove('c1');
      await store.remove('c2');
    });
  }
  const client = countingClient(s3.config, []);
  const listing = await client.send(new ListObjectsV2Command({ Bucket: s3.config.bucket }));
  client.destroy();
  t.same(listing.Contents ?? [], [], 'the bucket is empty again');
});

t.test('removeMany on a parent with more objects than one listing page holds (s3rver pages by 1,000)', async (t) => {
  const s3 = await startLocalS3Process('many-removals');
  const store = new S3FileStore(s3.config);
  t.teardown(async () => {
    await store.close();
    await s3.close();
  });
  const many = Array.from({ length: 1_050 }, (_, index) => `c1/elements/d${index}`);
  for (let start = 0; start < many.length; start += 50) {
    await Promise.all(many.slice(start, start + 50).map((prefix) => store.write(`${prefix}/0`, Buffer.from('png'))));
  }
  await store.removeMany([], many.slice(0, 1_040));
  const client = countingClient(s3.config, []);
  t.teardown(async () => client.destroy());
  const left: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: s3.config.bucket, ContinuationToken: token }));
    left.push(...(page.Contents ?? []).map((object) => object.Key!));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  t.same(left.sort(), many.slice(1_040).map((prefix) => `${prefix}/0`).sort(), 'every page was gone through: only the 10 not asked for are left');
});

t.test('a DeleteObjects that refuses some keys fails the removal, naming one (a quiet one still answers 200)', async (t) => {
  // What a bucket whose policy denies deletion answers, from a client standing in for one.
  const refusing = {
    send: async () => ({ Errors: [{ Key: 'c1/original-a', Code: 'AccessDenied', Message: 'Access Denied' }, { Key: 'c1/original-b', Code: 'AccessDenied', Message: 'Access Denied' }] }),
    destroy: () => undefined,
  } as unknown as S3Client;
  const store = new S3FileStore({ endpoint: undefined, bucket: 'locked', region: 'us-east-1', accessKeyId: undefined, secretAccessKey: undefined, forcePathStyle: true, prefix: '' }, refusing);
  await t.rejects(store.removeMany(['c1/original-a', 'c1/original-b'], []), /^S3 bucket locked did not delete 2 objects: c1\/original-a \(AccessDenied: Access Denied\)$/);
});
