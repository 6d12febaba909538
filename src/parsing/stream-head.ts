/**
 * The first bytes of a stream, to judge a file by its content while it is still arriving, and the
 * whole file for whoever stores it: those bytes alone when the stream ended within them, else a
 * stream that replays them and then the rest.
 */
import { PassThrough, type Readable } from 'node:stream';

export interface StreamHead {
  /** Up to the requested number of bytes (fewer when the stream is shorter). */
  head: Buffer;
  /** The whole content again, from the first byte: `head` itself when the stream ended within it. */
  content: Buffer | Readable;
}

export function readStreamHead(source: Readable, bytes: number): Promise<StreamHead> {
  // A stream that failed before this call (the next part of a multipart body that stopped short,
  // while the previous part was being stored) emits nothing more: its listeners would wait forever.
  if (source.errored) return Promise.reject(source.errored);
  if (source.destroyed) return Promise.reject(new Error('the upload stream was closed before it was read'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const finish = (complete: boolean) => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      source.pause();
      const head = Buffer.concat(chunks);
      if (complete) {
        resolve({ head, content: head });
        return;
      }
      const stream = new PassThrough();
      stream.write(head);
      // pipe() does not forward errors: a client that goes away mid-upload must still end the copy.
      source.once('error', (error) => stream.destroy(error));
      // A truncated body fails while the upload is still being judged, before anyone consumes this
      // stream: its error must not count as unhandled (it crashed the process). It stays on the
      // stream (`errored`), where stream.finished() reports it to the consumer.
      stream.on('error', () => undefined);
      source.pipe(stream);
      resolve({ head: head.subarray(0, bytes), content: stream });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= bytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onError = (error: Error) => reject(error);
    source.on('data', onData);
    source.once('end', onEnd);
    source.once('error', onError);
  });
}
