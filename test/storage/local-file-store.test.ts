import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { BLOCKING_FILE_IO_BYTES, LocalFileStore } from '../../src/storage/file-store.js';

async function storeIn(t: { teardown(fn: () => Promise<void>): void }) {
  const root = await mkdtemp(path.join(os.tmpdir(), 'rs-file-store-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  return { root, store: new LocalFileStore(root) };
}

t.test('a stream written in several parts reads back byte for byte', async (t) => {
  const { store } = await storeIn(t);
  const parts = Array.from({ length: 50 }, (_, index) => Buffer.alloc(10_000, index));
  await store.write('collection/original', Readable.from(parts));
  t.same(await store.read('collection/original'), Buffer.concat(parts));
});

t.test('a source that fails part way fails the write with its error', async (t) => {
  const { store } = await storeIn(t);
  const source = new Readable({ read() {} });
  source.push(Buffer.alloc(1000, 1));
  setTimeout(() => source.destroy(new Error('client went away')), 10);
  await t.rejects(store.write('collection/broken', source), /client went away/);
});

t.test('a source that closes before its end fails the write instead of hanging', async (t) => {
  const { store } = await storeIn(t);
  const source = new Readable({ read() {} });
  source.push(Buffer.alloc(1000, 1));
  setTimeout(() => source.destroy(), 10);
  await t.rejects(store.write('collection/cut', source), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
});

t.test('a target that cannot be written fails the write and stops reading the source', async (t) => {
  const { root, store } = await storeIn(t);
  await store.write('collection/first', Readable.from([Buffer.from('made the directory')]));
  await rm(path.join(root, 'collection'), { recursive: true });
  await writeFile(path.join(root, 'collection'), 'a file where the directory was');
  const source = new Readable({ read() {} });
  source.push(Buffer.alloc(1000, 1));
  await t.rejects(store.write('collection/second', source), { code: 'ENOTDIR' });
  t.ok(source.destroyed, 'the source is not left open');
});

t.test('a source that has already ended writes an empty file instead of hanging', async (t) => {
  const { store } = await storeIn(t);
  const source = Readable.from([]);
  source.resume();
  await new Promise((resolve) => source.once('end', resolve));
  await store.write('collection/empty', source);
  t.same(await store.read('collection/empty'), Buffer.alloc(0));
});

t.test('bytes given whole read back byte for byte, within the blocking-I/O size and beyond it', async (t) => {
  const { store } = await storeIn(t);
  const small = Buffer.alloc(BLOCKING_FILE_IO_BYTES, 7);
  const large = Buffer.alloc(BLOCKING_FILE_IO_BYTES + 1, 9);
  await store.write('collection/small', small);
  await store.write('other-collection/large', large);
  t.same(await store.read('collection/small'), small);
  t.same(await store.read('other-collection/large'), large);
  t.equal(await store.size('other-collection/large'), large.length);
});

t.test('a small write or read that fails rejects instead of throwing', async (t) => {
  const { root, store } = await storeIn(t);
  await writeFile(path.join(root, 'collection'), 'a file where the directory should be');
  const writing = store.write('collection/first', Buffer.from('hello'));
  t.type(writing, Promise);
  await t.rejects(writing, { code: 'EEXIST' });
  const reading = store.read('missing/key');
  t.type(reading, Promise);
  await t.rejects(reading, { code: 'ENOENT' });
});
