import { statfs } from 'node:fs/promises';
import path from 'node:path';
import { InsufficientStorageError } from '../errors.js';

/**
 * How long a reading of the free space stands before the disk is asked again: one statfs a second
 * at most, however many uploads arrive.
 */
const READING_TTL_MS = 1000;
/**
 * How long a reading of the space inside the embedded database stands. Its writes take that space
 * first, so a reading overstates the room by what was written since: at most ~100 MB in 5 s of
 * ingestion (19 MB/s measured), well inside MIN_FREE_DISK_MB's default.
 */
const REUSABLE_READING_TTL_MS = 5000;
const MB = 1024 * 1024;

/** Bytes an unprivileged process may still write on the file system holding `directory`. */
export type FreeSpaceReader = (directory: string) => Promise<number>;

/** Bytes the database in DATA_DIR holds free inside its files, which its next writes fill before the disk's. */
export type ReusableSpaceReader = () => Promise<number>;

export interface DiskSpaceGuardOptions {
  readDisk?: FreeSpaceReader;
  /** The embedded database: the space of its deleted rows counts as room (see DiskSpaceGuard). */
  readReusable?: ReusableSpaceReader;
}

/** Free bytes as the guard counts them; `reusable` is null when it was not read (the disk alone had room). */
interface SpaceReading {
  free: number;
  reusable: number | null;
}

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
  /** Space inside the embedded database counted as room; given only when the disk alone is short. */
  database_free_bytes?: number;
}

/**
 * Keeps the service's writes off a disk that is nearly full (MIN_FREE_DISK_MB). Run into a full
 * disk, the embedded database spun at 100 % CPU and answered no request, not even a health check,
 * until it was killed, and then would not start again ("RuntimeError: Aborted()") until space was
 * freed; uploads before that were 500s. Now uploads and vector upserts are refused with a 507 that
 * says why, while queries and deletes (which free space) go on. Off (`minFreeBytes` 0) when
 * DATA_DIR holds neither the database, the files nor the vectors.
 *
 * Deleting documents frees their files at once, but on the embedded database most of what a
 * document takes is rows (its chunks, vectors and, up to 64 KB, the original), and their space
 * stays inside the database's files for its next writes: the disk's free space did not grow, so
 * deleting documents never lifted the refusal. Once a vacuum has recorded that space
 * (EMBEDDED_VACUUM_INTERVAL_S), it counts as room, read only while the disk alone is short.
 */
export class DiskSpaceGuard {
  private diskReading: { at: number; bytes: Promise<number> } | undefined;
  private reusableReading: { at: number; bytes: Promise<number> } | undefined;
  private readonly readDisk: FreeSpaceReader;
  private readonly readReusable: ReusableSpaceReader | undefined;

  constructor(readonly directory: string, readonly minFreeBytes: number, options: DiskSpaceGuardOptions = {}) {
    this.readDisk = options.readDisk ?? availableBytes;
    this.readReusable = options.readReusable;
  }

  get enabled(): boolean {
    return this.minFreeBytes > 0;
  }

  /**
   * The disk's free bytes, as last read within READING_TTL_MS unless `fresh`; a disk that cannot be
   * read counts as roomy (the write itself will say).
   */
  private async diskFreeBytes(fresh: boolean): Promise<number> {
    const now = Date.now();
    if (fresh || !this.diskReading || now - this.diskReading.at >= READING_TTL_MS) {
      this.diskReading = { at: now, bytes: this.readDisk(this.directory).catch(() => Number.POSITIVE_INFINITY) };
    }
    return this.diskReading.bytes;
  }

  /** Space inside the database, as last read within REUSABLE_READING_TTL_MS; none when it cannot be read. */
  private async reusableBytes(read: ReusableSpaceReader): Promise<number> {
    const now = Date.now();
    if (!this.reusableReading || now - this.reusableReading.at >= REUSABLE_READING_TTL_MS) {
      this.reusableReading = { at: now, bytes: read().catch(() => 0) };
    }
    return this.reusableReading.bytes;
  }

  /**
   * The disk's free bytes and, when they leave no more than `wantedBytes` of room, the database's
   * reusable ones: reading those takes the embedded database's one connection, so they are read
   * only when they decide something.
   */
  private async reading(wantedBytes: number, fresh: boolean): Promise<SpaceReading> {
    const free = await this.diskFreeBytes(fresh);
    const counted = this.readReusable && free - this.minFreeBytes <= wantedBytes;
    return { free, reusable: counted ? await this.reusableBytes(this.readReusable) : null };
  }

  private roomOf({ free, reusable }: SpaceReading): number {
    return free + (reusable ?? 0) - this.minFreeBytes;
  }

  private leavesTooLittle(reading: SpaceReading, incomingBytes: number): boolean {
    return this.roomOf(reading) < incomingBytes;
  }

  /**
   * Bytes that may still be written before less than the minimum is free, the disk read now;
   * unbounded when the check is off. `wantedBytes`: what the caller means to write, so that the
   * database's reusable space is read when the disk alone is short of it.
   */
  async roomBytes(wantedBytes: number): Promise<number> {
    if (!this.enabled) return Number.POSITIVE_INFINITY;
    return this.roomOf(await this.reading(wantedBytes, true));
  }

  /** Whether writing `incomingBytes` more would leave less than the minimum free. */
  async isLow(incomingBytes = 0): Promise<boolean> {
    return this.enabled && this.leavesTooLittle(await this.reading(incomingBytes, false), incomingBytes);
  }

  /** Refuses (507) a request that would leave less than the minimum free, before anything of it is written. */
  async assertRoomFor(incomingBytes: number): Promise<void> {
    if (!await this.isLow(incomingBytes)) return;
    const freedBy = this.readReusable ? 'deleting documents frees their files at once and their rows at the embedded database\'s next vacuum' : 'deleting documents frees their files';
    throw new InsufficientStorageError(`${await this.describeShortage(incomingBytes)}: uploads and vector upserts are refused until space is freed `
      + `(${freedBy}); nothing of this request was kept`);
  }

  /**
   * `The disk holding DATA_DIR (/data) has 180 MB free (and 12 MB inside the embedded database)
   * and this request brings 21 MB, less than MIN_FREE_DISK_MB (256) would be left`. `wantedBytes`
   * as for roomBytes, so that the space inside the database is named whenever it was counted.
   */
  async describeShortage(incomingBytes = 0, wantedBytes = incomingBytes): Promise<string> {
    const { free, reusable } = await this.reading(wantedBytes, false);
    const inside = reusable === null ? '' : ` (and ${megabytes(reusable)} MB inside the embedded database)`;
    const incoming = incomingBytes > 0 ? ` and this request brings ${megabytes(incomingBytes)} MB` : '';
    return `The disk holding DATA_DIR (${this.directory}) has ${megabytes(free)} MB free${inside}${incoming}, less than MIN_FREE_DISK_MB (${Math.round(this.minFreeBytes / MB)}) would be left`;
  }

  async state(): Promise<DiskSpaceState | null> {
    if (!this.enabled) return null;
    const reading = await this.reading(0, false);
    return {
      free_bytes: Number.isFinite(reading.free) ? reading.free : null,
      min_free_bytes: this.minFreeBytes,
      writes_refused: this.leavesTooLittle(reading, 0),
      ...(reading.reusable === null ? {} : { database_free_bytes: reading.reusable }),
    };
  }
}
