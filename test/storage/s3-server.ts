import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import type { S3StoreConfig } from '../../src/config.js';

export interface LocalS3 {
  config: S3StoreConfig;
  close(): Promise<void>;
}

/** s3rver in this process on 127.0.0.1 (a free port) with one empty bucket, and the store config that reaches it. */
export async function startLocalS3(bucket = 'rs-files', prefix = ''): Promise<LocalS3> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  return {
    config: {
      endpoint: `http://127.0.0.1:${port}`, bucket, region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', forcePathStyle: true, prefix,
    },
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
