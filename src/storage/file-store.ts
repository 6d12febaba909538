import { createReadStream, createWriteStream, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ConcurrencyLimit } from '../concurrency/concurrency-limit.js';
import { ServiceUnavailableError } from '../errors.js';

/**
 * `stream.pipeline` without its per-call AbortController: pipeline aborts it when done, which builds
 * a DOMException with a stack trace, ~0.05-0.15 ms of CPU per stored upload (a tenth of receiving
 * a 2 KB file). An error on either side, or a source that closes before its end, destroys both.
 */
async function copyToFile(source: Readable, target: string): Promise<void> {
  const sink = createWriteStream(target);
  // pipe never ends the sink for a source that has already ended (an empty body read to its end).
  if (source.readableEnded) sink.end();
  else source.pipe(sink);
  try {
    await Promise.all([finished(source), finished(sink)]);
  } catch (error) {
    source.destroy();
    // A sink destroyed while its file is still being opened creates the file afterwards: the caller
    // removes the partial file as soon as this throws, so the file must be closed (or never
    // opened) by then, or it is left behind (measured: 5 of 200 with an immediate removal).
    sink.destroy();
    await finished(sink).catch(() => undefined);
    throw error;
  }
}

/**
 * Files up to this size are written and read with blocking calls. Each asynchronous file call is a
 * round trip through libuv's thread pool, and on these 2-core VMs waking a pool thread costs more
 * than the I/O: 0.09 ms of CPU for an asynchronous read of a 2 KB file against 0.01-0.02 ms blocking,
 * 0.14 ms against 0.04 ms for a write, and a stream write ~0.3 ms. Ingesting 5,000 small documents
 * spent ~17 % of the main thread in file calls (bench/search/search-bench.ts with a CPU profile).
 * A blocking call on a local file this small returns in tens of microseconds; PGlite already does
 * all of its file I/O this way on the same thread.
 */
export const BLOCKING_FILE_IO_BYTES = 64 * 1024;

/**
 * Where original uploads and element images are kept. Keys are made by the service
 * (`<collection id>/<uuid>`, `<collection id>/elements/<document id>/<n>`), never taken from clients.
 */
/** The store could not be reached, or failed: a 503 for a request, a failure worth retrying for ingestion (the file is not gone). */
export class FileStoreUnavailableError extends ServiceUnavailableError {
  constructor(store: string, reason: string) {
    super(`The file store (${store}) is unavailable: ${reason}; try again shortly`);
  }
}

export interface FileStore {
  /** Stores `source` at `key`; a stream is copied as it arrives, never held whole in memory. */
  write(key: string, source: Readable | Buffer): Promise<void>;
  read(key: string): Promise<Buffer>;
  /** A stream of the stored bytes, for serving a file without loading it. */
  openRead(key: string): Promise<Readable>;
  size(key: string): Promise<number>;
  /** Removes a key or every key under a `prefix/`. */
  remove(keyOrPrefix: string): Promise<void>;
  /**
   * Removes these keys and every key under these prefixes (`prefix/...`), as a truncate does with a
   * collection's documents: on S3 in a request per 1,000 objects instead of two per key or prefix.
   */
  removeMany(keys: string[], prefixes: string[]): Promise<void>;
  /** Releases connections (the S3 client's sockets). */
  close?(): Promise<void>;
}

/** Removals a store has in flight at once: an S3 removal is a request or two. */
export const FILE_REMOVALS_AT_ONCE = 16;
/**
 * From this many prefixes under one parent (the element pictures of this many documents), removeMany
 * lists the parent once instead of each prefix: one listing, instead of one a prefix, for a truncate
 * of 50,000 documents that mostly have no pictures at all.
 */
const PREFIXES_LISTED_BY_PARENT = 32;

/** The prefixes to find by listing their parent (key: the parent), and those to remove one by one. */
export function prefixesByParent(prefixes: string[]): { byParent: Map<string, Set<string>>; alone: string[] } {
  const groups = new Map<string, string[]>();
  for (const prefix of new Set(prefixes)) {
    const slash = prefix.lastIndexOf('/');
    const parent = slash > 0 ? prefix.slice(0, slash) : '';
    const group = groups.get(parent);
    if (group) group.push(prefix);
    else groups.set(parent, [prefix]);
  }
  const byParent = new Map<string, Set<string>>();
  const alone: string[] = [];
  for (const [parent, group] of groups) {
    if (parent && group.length >= PREFIXES_LISTED_BY_PARENT) byParent.set(parent, new Set(group));
    else alone.push(...group);
  }
  return { byParent, alone };
}

const SAFE_KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_.-]+)*$/;

/** Keys are made by the service, but a bad one must still never reach a path or a bucket. */
export function assertSafeKey(key: string): void {
  if (!SAFE_KEY.test(key) || key.split('/').some((segment) => segment === '..' || segment === '.')) throw new Error(`unsafe storage key: ${key}`);
}

/** Files under DATA_DIR/files. */
export class LocalFileStore implements FileStore {
  /**
   * Directories this store made: every upload of a collection goes to the same one. A removal forgets
   * them all, not only those at or under the removed paths: finding those went over all of them for
   * each path removed, 10.3 s for the pictures of 20,000 documents. A directory forgotten costs one
   * mkdir at its next write.
   */
  private readonly madeDirectories = new Set<string>();

  constructor(private readonly root: string) {}

  private resolve(key: string): string {
    assertSafeKey(key);
    return path.join(this.root, key);
  }

  async write(key: string, source: Readable | Buffer): Promise<void> {
    const target = this.resolve(key);
    const directory = path.dirname(target);
    // Once per directory (a collection's, or a document's images): blocking costs less than the trip.
    if (!this.madeDirectories.has(directory)) {
      mkdirSync(directory, { recursive: true });
      this.madeDirectories.add(directory);
    }
    if (!Buffer.isBuffer(source)) await copyToFile(source, target);
    else if (source.length <= BLOCKING_FILE_IO_BYTES) writeFileSync(target, source);
    else await writeFile(target, source);
  }

  async read(key: string): Promise<Buffer> {
    const target = this.resolve(key);
    if (statSync(target).size <= BLOCKING_FILE_IO_BYTES) return readFileSync(target);
    return readFile(target);
  }

  async openRead(key: string): Promise<Readable> {
    const target = this.resolve(key);
    // Opening first turns a missing file into a rejected promise rather than a stream error later.
    await stat(target);
    return createReadStream(target);
  }

  async size(key: string): Promise<number> {
    return (await stat(this.resolve(key))).size;
  }

  async remove(keyOrPrefix: string): Promise<void> {
    const target = this.resolve(keyOrPrefix);
    this.madeDirectories.clear();
    await rm(target, { recursive: true, force: true });
  }

  async removeMany(keys: string[], prefixes: string[]): Promise<void> {
    const { byParent, alone } = prefixesByParent(prefixes);
    const present: string[] = [];
    for (const [parent, group] of byParent) {
      const names = await readdir(this.resolve(parent)).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return [];
        throw error;
      });
      for (const name of names) if (group.has(`${parent}/${name}`)) present.push(`${parent}/${name}`);
    }
    const targets = [...keys, ...alone, ...present].map((key) => this.resolve(key));
    this.madeDirectories.clear();
    const limit = new ConcurrencyLimit(FILE_REMOVALS_AT_ONCE);
    await Promise.all(targets.map((target) => limit.run(() => rm(target, { recursive: true, force: true }))));
  }
}
