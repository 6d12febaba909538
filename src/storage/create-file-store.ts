import path from 'node:path';
import type { Config } from '../config.js';
import { LocalFileStore, type FileStore } from './file-store.js';

/**
 * The file store the configuration asks for: DATA_DIR/files by default, a bucket with FILE_STORE=s3.
 * The S3 store (and the AWS SDK, a quarter of a second to import) loads only when it is chosen.
 */
export async function createFileStore(config: Config, filesDir?: string): Promise<FileStore> {
  if (config.fileStore === 's3') {
    const { S3FileStore } = await import('./s3-file-store.js');
    return new S3FileStore(config.s3);
  }
  return new LocalFileStore(filesDir ?? path.join(config.dataDir, 'files'));
}
