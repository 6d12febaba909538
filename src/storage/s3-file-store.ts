import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectsCommand,
  GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import type { S3StoreConfig } from '../config.js';
import { isNetworkErrorCode } from '../network-failures.js';
import { ConcurrencyLimit } from '../concurrency/concurrency-limit.js';
import { assertSafeKey, FILE_REMOVALS_AT_ONCE, FileStoreUnavailableError, prefixesByParent, type FileStore } from './file-store.js';

/**
 * Bytes per multipart part: S3 needs at least 5 MiB for every part but the last. One part is
 * held in memory at a time, so an upload of any size costs this much buffer, not its size.
 */
const PART_BYTES = 8 * 1024 * 1024;
/** DeleteObjects takes at most 1,000 keys a request. */
const DELETE_BATCH = 1000;

async function collect(body: unknown): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/**
 * `error` as FileStoreUnavailableError when the bucket was unreachable (the SDK passes Node's network
 * errors on, with their code) or failed (5xx); other errors (a missing object, a refused key) unchanged.
 */
function unavailableOrAsIs(bucket: string, error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const unreachable = isNetworkErrorCode(code) || error.name === 'TimeoutError';
  if (!unreachable && !(status !== undefined && status >= 500)) return error;
  return new FileStoreUnavailableError(`S3 bucket ${bucket}`, error.message || String(code ?? status));
}

/**
 * Files in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2...), so that API replicas share them.
 * Uploads stream: a file smaller than one part is sent with PutObject and its known length, a
 * larger one as a multipart upload, part by part.
 */
export class S3FileStore implements FileStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(config: S3StoreConfig, client?: S3Client) {
    if (!config.bucket) throw new Error('the S3 file store needs a bucket');
    this.bucket = config.bucket;
    this.prefix = config.prefix ? `${config.prefix.replace(/\/+$/, '')}/` : '';
    this.client = client ?? new S3Client({
      region: config.region,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      forcePathStyle: config.forcePathStyle,
      ...(config.accessKeyId && config.secretAccessKey ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } } : {}),
      // The SDK's default checksums (CRC32 trailers on streamed bodies) are not understood by many
      // S3-compatible stores and corrupt streamed uploads on some (../shared/STACK.md).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private objectKey(key: string): string {
    assertSafeKey(key);
    return `${this.prefix}${key}`;
  }

  async write(key: string, content: Readable | Buffer): Promise<void> {
    await this.writeObject(key, content).catch(this.unavailable);
  }

  async read(key: string): Promise<Buffer> {
    return collect(await this.openRead(key)).catch(this.unavailable);
  }

  async openRead(key: string): Promise<Readable> {
    const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) })).catch(this.unavailable);
    return answer.Body instanceof Readable ? answer.Body : Readable.from(answer.Body as AsyncIterable<Uint8Array>);
  }

  async size(key: string): Promise<number> {
    const answer = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) })).catch(this.unavailable);
    return Number(answer.ContentLength ?? 0);
  }

  /** Deletes the object `key` and every object under `key/` (a collection's or a document's files). */
  async remove(keyOrPrefix: string): Promise<void> {
    await this.removeMany([keyOrPrefix], [keyOrPrefix]);
  }

  async removeMany(keys: string[], prefixes: string[]): Promise<void> {
    await this.removeManyObjects(keys, prefixes).catch(this.unavailable);
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  private readonly unavailable = (error: unknown): never => {
    throw unavailableOrAsIs(this.bucket, error);
  };

  private async writeObject(key: string, content: Readable | Buffer): Promise<void> {
    const objectKey = this.objectKey(key);
    // A Buffer iterates byte by byte: as one chunk it takes the same path as a stream's chunks.
    const source = Buffer.isBuffer(content) ? [content] : content;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let uploadId: string | undefined;
    const parts: Array<{ ETag: string | undefined; PartNumber: number }> = [];
    const sendPart = async (body: Buffer) => {
      uploadId ??= (await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey }))).UploadId;
      const partNumber = parts.length + 1;
      const answer = await this.client.send(new UploadPartCommand({
        Bucket: this.bucket, Key: objectKey, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length,
      }));
      parts.push({ ETag: answer.ETag, PartNumber: partNumber });
    };
    try {
      for await (const chunk of source) {
        pending.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
        pendingBytes += (chunk as Buffer).length;
        if (pendingBytes >= PART_BYTES) {
          const body = Buffer.concat(pending);
          pending = [];
          pendingBytes = 0;
          await sendPart(body);
        }
      }
      const rest = Buffer.concat(pending);
      if (!uploadId) {
        await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: objectKey, Body: rest, ContentLength: rest.length }));
        return;
      }
      if (rest.length > 0) await sendPart(rest);
      await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
    } catch (error) {
      if (uploadId) await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId })).catch(() => undefined);
      throw error;
    }
  }

  private async removeManyObjects(keys: string[], prefixes: string[]): Promise<void> {
    await this.deleteObjectKeys(keys.map((key) => this.objectKey(key)));
    const { byParent, alone } = prefixesByParent(prefixes);
    for (const [parent, group] of byParent) {
      const listedPrefix = `${this.objectKey(parent)}/`;
      const wanted = new Set([...group].map((prefix) => this.objectKey(prefix)));
      // An object's prefix of that level: the parent and the next segment of its key.
      await this.removeListed(listedPrefix, (key) => {
        const end = key.indexOf('/', listedPrefix.length);
        return end > 0 && wanted.has(key.slice(0, end));
      });
    }
    const limit = new ConcurrencyLimit(FILE_REMOVALS_AT_ONCE);
    await Promise.all(alone.map((prefix) => limit.run(() => this.removeListed(`${this.objectKey(prefix)}/`, () => true))));
  }

  /** Deletes the objects listed under `listedPrefix` that `chosen` takes, a page of the listing at a time. */
  private async removeListed(listedPrefix: string, chosen: (key: string) => boolean): Promise<void> {
    let continuationToken: string | undefined;
    do {
      const listed = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: listedPrefix, ContinuationToken: continuationToken }));
      await this.deleteObjectKeys((listed.Contents ?? []).map((object) => object.Key!).filter((key) => key && chosen(key)));
      continuationToken = listed.IsTruncated ? listed.NextContinuationToken : undefined;
    } while (continuationToken);
  }

  private async deleteObjectKeys(keys: string[]): Promise<void> {
    for (let start = 0; start < keys.length; start += DELETE_BATCH) {
      const answer = await this.client.send(new DeleteObjectsCommand({
        Bucket: this.bucket, Delete: { Objects: keys.slice(start, start + DELETE_BATCH).map((Key) => ({ Key })), Quiet: true },
      }));
      // A quiet DeleteObjects answers 200 and names only the keys it did not delete.
      const refused = answer.Errors ?? [];
      if (refused.length > 0) throw new Error(`S3 bucket ${this.bucket} did not delete ${refused.length} objects: ${refused[0]!.Key} (${refused[0]!.Code}: ${refused[0]!.Message})`);
    }
  }
}
