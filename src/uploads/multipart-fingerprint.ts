import { createHash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';

/**
 * What a multipart body says, without its boundary: each part in order, a field by name and value,
 * a file by field name, filename, type and a SHA-256 of its bytes. Clients draw a new boundary for
 * each request, so the raw bytes of a retried upload differ; its fingerprint does not, and that of
 * another file of the same length does (an Idempotency-Key reused for it is a 422).
 */
export class MultipartFingerprint {
  private readonly entries: Array<() => unknown[]> = [];
  private readonly fileDigests: Array<Promise<void>> = [];
  private complete = false;
  private unreadable = false;

  addField(name: string, value: string): void {
    this.entries.push(() => ['field', name, value]);
  }

  /** The file's stream, passing through a hash of its bytes: read it instead of `file`. */
  addFile(name: string, filename: string, contentType: string, file: Readable): Readable {
    const hash = createHash('sha256');
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        callback(null, chunk);
      },
    });
    file.on('error', (error) => tap.destroy(error));
    file.pipe(tap);
    let digest = '';
    this.fileDigests.push(finished(tap).then(() => {
      digest = hash.digest('hex');
    }, () => {
      this.unreadable = true;
    }));
    this.entries.push(() => ['file', name, filename, contentType, digest]);
    return tap;
  }

  /** Called once every part was read: a body left partly unread has no fingerprint. */
  markComplete(): void {
    this.complete = true;
  }

  /** The fingerprint, or null when the body was not read to its end. */
  async digest(): Promise<string | null> {
    if (!this.complete) return null;
    await Promise.all(this.fileDigests);
    if (this.unreadable) return null;
    const hash = createHash('sha256');
    for (const entry of this.entries) hash.update(`${JSON.stringify(entry())}\n`);
    return hash.digest('hex');
  }
}
