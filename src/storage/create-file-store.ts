import path from 'node:path';
import type { Config } from '../config.js';
import { LocalFileStore, type FileStore } from './file-store.js';
import { S3FileStore } from './s3-file-store.js';

/** The file store the configuration asks for: DATA_DIR/files by default, a bucket with FILE_STORE=s3. */
export function createFileStore(config: Config, filesDir?: string): FileStore {
  if (config.fileStore === 's3') return new S3FileStore(config.s3);
  return new LocalFileStore(filesDir ?? path.join(config.dataDir, 'files'));
}
