import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import type { S3StoreConfig } from '../../src/config.js';
import { LocalFileStore, type FileStore } from '../../src/storage/file-store.js';
import { S3FileStore } from '../../src/storage/s3-file-store.js';

export interface LocalS3 {
  config: S3StoreConfig;
  close(): Promise<void>;
}

function localS3Config(port: number, bucket: string, prefix: string): S3StoreConfig {
  return { endpoint: `http://127.0.0.1:${port}`, bucket, region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', forcePathStyle: true, prefix };
}

/** s3rver in this process on 127.0.0.1 (a free port) with one empty bucket, and the store config that reaches it. */
export async function startLocalS3(bucket = 'rs-files', prefix = ''): Promise<LocalS3> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  return {
    config: localS3Config(port, bucket, prefix),
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * s3rver in a process of its own, run with `--openssl-legacy-provider`: without it s3rver answers a
 * listing's second page (a continuation token) with a 500 (../shared/STACK.md), and the test
 * processes keep OpenSSL's defaults, as the service does.
 */
export async function startLocalS3Process(bucket = 'rs-files', prefix = ''): Promise<LocalS3> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-s3rver-'));
  const options = JSON.stringify({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const script = `const S3rver = require(${JSON.stringify(createRequire(import.meta.url).resolve('s3rver'))}); new S3rver(${options}).run().then(({ port }) => console.log(port));`;
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_OPTIONS: '' } });
  const exited = once(child, 'exit');
  const [line] = await Promise.race([once(createInterface({ input: child.stdout! }), 'line'), exited.then(() => [undefined])]) as [string | undefined];
  if (!line) throw new Error('s3rver exited before it listened');
  return {
    config: localS3Config(Number(line), bucket, prefix),
    async close() {
      child.kill();
      await exited;
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * The two file stores the same checks run against: a local one in a scratch directory and an S3 one
 * on s3rver in this process (through a client `makeClient` makes, when given), all removed when `t` ends.
 */
export async function localAndS3Stores(t: { teardown(fn: () => Promise<void>): void }, bucket: string, prefix: string, makeClient?: (config: S3StoreConfig) => S3Client) {
  const s3 = await startLocalS3(bucket, prefix);
  // The local root sits inside a directory of this run's own, so that what a key like "../escape"
  // could write lands there: a file left in the shared temporary directory by anything else would
  // otherwise read as an escape.
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'rs-store-'));
  const root = path.join(scratch, 'root');
  await mkdir(root);
  const s3Store = new S3FileStore(s3.config, makeClient?.(s3.config));
  t.teardown(async () => {
    await s3Store.close();
    await s3.close();
    await rm(scratch, { recursive: true, force: true });
  });
  const stores: Array<[string, FileStore]> = [['local', new LocalFileStore(root)], ['s3', s3Store]];
  return { s3, root, stores };
}
