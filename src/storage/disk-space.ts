import { statfs } from 'node:fs/promises';
import path from 'node:path';
import { InsufficientStorageError } from '../errors.js';

/**
 * How long a reading of the free space stands before the disk is asked again: one statfs a second
 * at most, however many uploads arrive.
 */
const READING_TTL_MS = 1000;
const MB = 1024 * 1024;

/** Bytes an unprivileged process may still write on the file system holding `directory`. */
export type FreeSpaceReader = (directory: string) => Promise<number>;

/** Free bytes of the file system holding `directory`, or its nearest existing parent (a DATA_DIR not made yet). */
export async function availableBytes(directory: string): Promise<number> {
  for (let current = directory; ; current = path.dirname(current)) {
    try {
      const stats = await statfs(current);
      return stats.bavail * stats.bsize;
    } catch (error) {
      if (path.dirname(current) === current) throw error;
    }
  }
}

/**
 * A write that failed because its disk is full: ENOSPC from the file system, or PostgreSQL's
 * disk_full (53100), which the embedded database reports too.
 */
export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === '53100';
}

/** `563`, `0.3`: megabytes as messages about the disk give them. */
export function megabytes(bytes: number): string {
  return (Math.max(bytes, 0) / MB).toFixed(bytes < 10 * MB ? 1 : 0);
}

/** What /health/ready says of the disk. */
export interface DiskSpaceState {
  free_bytes: number | null;
  min_free_bytes: number;
  /** Whether uploads and vector upserts are refused and ingestion waits. */
  writes_refused: boolean;
}

/**
 * Keeps the service's writes off a disk that is nearly full (MIN_FREE_DISK_MB). Run into a full
 * disk, the embedded database spun at 100 % CPU and answered no request, not even a health check,
 * until it was killed, and then would not start again ("RuntimeError: Aborted()") until space was
 * freed; uploads before that were 500s. Now uploads and vector upserts are refused with a 507 that
 * says why, while queries and deletes (which free space) go on. Off (`minFreeBytes` 0) when
 * DATA_DIR holds neither the database, the files nor the vectors.
 */
export class DiskSpaceGuard {
  private reading: { at: number; bytes: Promise<number> } | undefined;

  constructor(readonly directory: string, readonly minFreeBytes: number, private readonly read: FreeSpaceReader = availableBytes) {}

  get enabled(): boolean {
    return this.minFreeBytes > 0;
  }

  /**
   * Free bytes, as last read within READING_TTL_MS unless `fresh`; a disk that cannot be read
   * counts as roomy (the write itself will say).
   */
  async freeBytes(fresh = false): Promise<number> {
    const now = Date.now();
    if (fresh || !this.reading || now - this.reading.at >= READING_TTL_MS) {
      this.reading = { at: now, bytes: this.read(this.directory).catch(() => Number.POSITIVE_INFINITY) };
    }
    return this.reading.bytes;
  }

  /** Bytes that may still be written before less than the minimum is free, read now; unbounded when the check is off. */
  async roomBytes(): Promise<number> {
    if (!this.enabled) return Number.POSITIVE_INFINITY;
    return (await this.freeBytes(true)) - this.minFreeBytes;
  }

  /** Whether writing `incomingBytes` more would leave less than the minimum free. */
  async isLow(incomingBytes = 0): Promise<boolean> {
    return this.enabled && (await this.freeBytes()) - incomingBytes < this.minFreeBytes;
  }

  /** Refuses (507) a request that would leave less than the minimum free, before anything of it is written. */
  async assertRoomFor(incomingBytes: number): Promise<void> {
    if (!await this.isLow(incomingBytes)) return;
    throw new InsufficientStorageError(`${await this.describeShortage(incomingBytes)}: uploads and vector upserts are refused until space is freed `
      + '(deleting documents frees their files); nothing of this request was kept');
  }

  /** `The disk holding DATA_DIR (/data) has 180 MB free, less than MIN_FREE_DISK_MB (256)`. */
  async describeShortage(incomingBytes = 0): Promise<string> {
    const free = await this.freeBytes();
    const incoming = incomingBytes > 0 ? ` and this request brings ${megabytes(incomingBytes)} MB` : '';
    return `The disk holding DATA_DIR (${this.directory}) has ${megabytes(free)} MB free${incoming}, less than MIN_FREE_DISK_MB (${Math.round(this.minFreeBytes / MB)}) would be left`;
  }

  async state(): Promise<DiskSpaceState | null> {
    if (!this.enabled) return null;
    const free = await this.freeBytes();
    return { free_bytes: Number.isFinite(free) ? free : null, min_free_bytes: this.minFreeBytes, writes_refused: await this.isLow() };
  }
}
