/**
 * The embedded database on a thread of its own. PGlite is PostgreSQL compiled to WebAssembly and
 * runs on the thread that calls it; on the main thread its statements took ~40 % of that thread's
 * time while ingesting (bench/search/ingest-profile.ts), next to HTTP, parsing and the vector index.
 * Here they run on another core, and uploads are received while a batch is being written.
 *
 * It offers the part of PGlite's API that the ORM's knex dialect and the SqlRunner use: `query`,
 * `exec`, `waitReady`, `closed`, `close`. Statements run in the order they are sent, on PGlite's
 * one connection, as before. Errors keep PostgreSQL's fields (code, detail, constraint, ...).
 */
import type { Results } from '@electric-sql/pglite';
import { startModuleWorker } from '../threads/module-worker.js';
import { ThreadRequests } from '../threads/thread-requests.js';

export interface PgliteThreadSettings {
  /** undefined keeps the database in memory (tests). */
  dataDir: string | undefined;
  /** Session settings applied once, before the first statement. */
  settings: Record<string, string>;
}

export type PgliteThreadRequest =
  | { id: number; method: 'query'; sql: string; params: unknown[] }
  | { id: number; method: 'exec'; sql: string }
  | { id: number; method: 'close' };

export class PgliteThread {
  private constructor(private readonly requests: ThreadRequests, readonly waitReady: Promise<void>) {}

  /** Starts the thread and opens the database there; rejects with PGlite's own error if it cannot. */
  static async open(settings: PgliteThreadSettings): Promise<PgliteThread> {
    const requests = new ThreadRequests(startModuleWorker(import.meta.url, 'pglite-thread-worker', { workerData: settings }), 'embedded database');
    try {
      await requests.ready;
    } catch (error) {
      await requests.terminate('the embedded database did not open');
      throw error;
    }
    return new PgliteThread(requests, Promise.resolve());
  }

  get closed(): boolean {
    return this.requests.stopped;
  }

  query<T>(sql: string, params?: unknown[]): Promise<Results<T>> {
    return this.requests.request({ method: 'query', sql, params: params ?? [] });
  }

  exec(sql: string): Promise<Results[]> {
    return this.requests.request({ method: 'exec', sql });
  }

  /** Closes the database (a clean shutdown of its files), then ends the thread. */
  async close(): Promise<void> {
    if (this.requests.stopped) return;
    try {
      await this.requests.request({ method: 'close' });
    } finally {
      await this.requests.terminate('the embedded database is closed');
    }
  }
}
