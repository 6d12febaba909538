import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { DestinationStream } from 'pino';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/db/database.js';
import { runEveryStep, throwFailures } from '../../src/graceful-stop.js';
import { createLogger } from '../../src/logger.js';
import { createServices, type AppServices } from '../../src/services.js';
import type { FreeSpaceReader } from '../../src/storage/disk-space.js';
import { migratedEmbeddedArchive } from './embedded-template.js';
import { migratedPostgresTemplate } from './postgres-template.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

export type Backend = 'pglite' | 'postgresql';

const TEST_PASSWORD_HASH_COST = { memoryKib: 8, iterations: 1, parallelism: 1 };

/** PGlite always; PostgreSQL too when TEST_DATABASE_URL is set (as .ci/run does). */
export function testBackends(): Backend[] {
  return process.env.TEST_DATABASE_URL ? ['pglite', 'postgresql'] : ['pglite'];
}

export interface TestApp {
  app: App;
  services: AppServices;
  backend: Backend;
  close(): Promise<void>;
}

export interface ScratchDatabaseOptions {
  /** A copy of the migrated template (postgres-template.ts) instead of an empty database. */
  migrated?: boolean;
  encoding?: 'SQL_ASCII' | 'LATIN1';
}

/** A throwaway database on the PostgreSQL server of TEST_DATABASE_URL, dropped on close. */
export async function createScratchDatabase(baseUrl: string, options: ScratchDatabaseOptions = {}): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `rs_test_${randomBytes(6).toString('hex')}`;
  const source = options.migrated ? ` template ${await migratedPostgresTemplate(baseUrl)}` : '';
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create database ${name}${options.encoding ? ` encoding '${options.encoding}' locale 'C' template template0` : source}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** A scratch database URL on TEST_DATABASE_URL's server, dropped when the test `t` ends. */
export async function scratchDatabaseUrl(t: { teardown(fn: () => Promise<void>): void }, options: ScratchDatabaseOptions = {}): Promise<string> {
  const scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!, options);
  t.teardown(() => scratch.drop());
  return scratch.url;
}

/**
 * A scratch database (scratchDatabaseUrl) reached through a TCP proxy the test can cut and restore:
 * `url` goes through the proxy (give it to an app as `replicaOf`), `direct` does not.
 */
export async function scratchDatabaseBehindProxy(t: { teardown(fn: () => Promise<void>): void }): Promise<{ url: string; direct: string; proxy: TcpProxy }> {
  const direct = await scratchDatabaseUrl(t);
  const proxy = await startTcpProxy({ host: new URL(direct).hostname, port: Number(new URL(direct).port || 5432) });
  t.teardown(() => proxy.close());
  const proxied = new URL(direct);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  return { url: proxied.toString(), direct, proxy };
}

/** Builds the app exactly as production does, on a fresh database of the given backend. */
export interface TestAppOptions {
  /** Start the ingestion workers (default true). */
  startWorkers?: boolean;
  /** Reuse this data directory (files) instead of a fresh one; it is then not removed on close. */
  dataDir?: string;
  /** Reuse an open database (restart tests); it is then not closed or dropped on close. */
  database?: Database;
  /**
   * A second replica: opens its own connection pool on this PostgreSQL database (another app's
   * `services.config.databaseUrl`), which it leaves in place on close.
   */
  replicaOf?: string;
  /** Every log line of the app, at trace level, goes here (tests that inspect what is logged). */
  logStream?: DestinationStream;
  /** Stands in for the free space of DATA_DIR's disk (test/storage/disk-space). */
  readDiskFreeBytes?: FreeSpaceReader;
}

export async function buildTestApp(backend: Backend = 'pglite', overrides: Partial<Config> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const scratch = backend === 'postgresql' && !options.database && !options.replicaOf ? await createScratchDatabase(process.env.TEST_DATABASE_URL!, { migrated: true }) : undefined;
  const databaseUrl = options.replicaOf ?? scratch?.url;
  const dataDir = options.dataDir ?? await mkdtemp(path.join(os.tmpdir(), 'rs-test-'));
  const config: Config = {
    ...loadConfig({}),
    dataDir,
    vectorStore: backend === 'postgresql' ? 'pgvector' : 'embedded',
    keywordIndex: backend === 'postgresql' ? 'sql' : 'memory',
    // Loads at start would race what tests expect of a restart (test/search/index-warm-up turns it on).
    warmUpIndexes: false,
    // The suite must not depend on the host's free space (test/storage/disk-space sets it).
    minFreeDiskBytes: 0,
    // Argon2id's least cost: at the default (64 MiB, 3 passes) each hash took about 0.4 s of CPU, and
    // nearly every test app sets up an admin (test/auth/password-hash-cost and users-email-race use real costs).
    passwordHashCost: TEST_PASSWORD_HASH_COST,
    ...overrides,
    databaseUrl,
  };
  // The server's own logger (redaction, error serializer), so what tests read of logs is what operators get.
  const logger = createLogger(options.logStream ? 'trace' : process.env.TEST_LOG_LEVEL ?? 'silent', options.logStream);
  const db = options.database ?? await openDatabase({ databaseUrl, loadDataDir: databaseUrl ? undefined : await migratedEmbeddedArchive(), logger });
  const services = await createServices(config, db, logger, { readDiskFreeBytes: options.readDiskFreeBytes }).catch(async (error: unknown) => {
    // A refused start (test/search/in-process-indexes-lock) leaves nothing open behind it.
    await runEveryStep([
      async () => { if (!options.database) await db.close(); },
      async () => { await scratch?.drop(); },
      async () => { if (!options.dataDir) await rm(dataDir, { recursive: true, force: true }); },
    ]);
    throw error;
  });
  const app = await buildApp({ services, logger });
  await app.ready();
  if (options.startWorkers ?? true) await services.start();
  return {
    app,
    services,
    backend,
    async close() {
      // Every step, also after one that fails (tests of failing stop steps left their directory behind).
      throwFailures(await runEveryStep([
        () => app.close(),
        () => services.stop(),
        async () => { if (!options.database) await db.close(); },
        async () => { await scratch?.drop(); },
        async () => { if (!options.dataDir) await rm(dataDir, { recursive: true, force: true }); },
      ]), 'steps of closing the test app');
    },
  };
}

export interface RestartableTestApp {
  dataDir: string;
  /** Closes the running app, if any (a graceful stop), then builds the next on the same database and data directory. */
  restart(overrides?: Partial<Config>, logStream?: DestinationStream): Promise<TestApp>;
  /** Closes the running app, if any. */
  stop(): Promise<void>;
}

/**
 * Apps one after another on one database and data directory, as a process restarted on them; the
 * last is closed, and the database and directory removed, when `t` ends.
 */
export async function restartableTestApp(t: { teardown(fn: () => Promise<void>): void }, backend: Backend, directoryPrefix: string): Promise<RestartableTestApp> {
  const scratch = backend === 'postgresql' ? await createScratchDatabase(process.env.TEST_DATABASE_URL!, { migrated: true }) : undefined;
  const database = await openDatabase({ databaseUrl: scratch?.url });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), directoryPrefix));
  let running: TestApp | undefined;
  const stop = async () => {
    const app = running;
    running = undefined;
    await app?.close();
  };
  t.teardown(async () => {
    // The app first, then the database it used.
    await stop();
    await database.close();
    await scratch?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return {
    dataDir,
    stop,
    async restart(overrides = {}, logStream) {
      await stop();
      running = await buildTestApp(backend, overrides, { dataDir, database, logStream });
      return running;
    },
  };
}

export const ADMIN = { email: 'admin@example.com', password: 'correct horse battery' };

/** Runs first-run setup and returns the session cookie header value (`name=value`). */
export async function setupAdmin(app: App): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: ADMIN });
  if (response.statusCode !== 201) throw new Error(`setup failed: ${response.statusCode} ${response.body}`);
  return sessionCookieOf(response);
}

/** An app whose first admin is set up, closed when `t` ends: how most HTTP tests begin. */
export async function adminTestApp(t: { teardown(fn: () => Promise<void>): void }, backend: Backend, overrides: Partial<Config> = {}, options: TestAppOptions = {}) {
  const testApp = await buildTestApp(backend, overrides, options);
  t.teardown(() => testApp.close());
  const cookie = await setupAdmin(testApp.app);
  return { ...testApp, cookie, admin: { cookie } };
}

/** Creates a collection; anything but 201 throws, since the test is about what comes after. */
export async function createTestCollection(app: App, headers: Record<string, string>, payload: Record<string, unknown>) {
  const response = await app.inject({ method: 'POST', url: '/v1/collections', headers, payload });
  if (response.statusCode !== 201) throw new Error(`collection: ${response.statusCode} ${response.body}`);
  return response.json() as { id: string; name: string; dimension: number };
}

export function sessionCookieOf(response: { cookies: Array<{ name: string; value: string }> }): string {
  const cookie = response.cookies.find((c) => c.name === 'svc_session');
  if (!cookie) throw new Error('no session cookie in the response');
  return `${cookie.name}=${cookie.value}`;
}

/** Mints an API key through the admin API and returns its plaintext and record. */
export async function createApiKey(app: App, cookie: string, body: Record<string, unknown> = { name: 'test key' }) {
  const response = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: body });
  if (response.statusCode !== 201) throw new Error(`key creation failed: ${response.statusCode} ${response.body}`);
  const record = response.json() as { id: string; key: string; prefix: string; scopes: string[] };
  return record;
}

export function bearer(key: string) {
  return { authorization: `Bearer ${key}` };
}

/** A multipart body with one file and optional metadata, for `app.inject`. */
export function multipartUpload(files: Array<{ filename: string; content: string | Buffer; contentType?: string; field?: string }>, fields: Record<string, string> = {}) {
  const boundary = `----rs${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const file of files) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'file'}"; filename="${file.filename}"\r\nContent-Type: ${file.contentType ?? 'application/octet-stream'}\r\n\r\n`));
    parts.push(Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content));
    parts.push(Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** Uploads one file into `collection` (POST .../documents) and returns the response. */
export async function uploadDocument(app: App, headers: Record<string, string>, collection: string, file: { filename: string; content: string | Buffer; contentType?: string }) {
  const form = multipartUpload([file]);
  return app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...headers, ...form.headers }, payload: form.payload });
}

/** Polls until no document of the collection is pending or processing; returns the documents. */
export async function waitForIngestion(app: App, collection: string, headers: Record<string, string>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // The stats endpoint is one cheap query; listing every document would compete with ingestion.
    const stats = (await app.inject({ url: `/v1/collections/${collection}/stats`, headers })).json() as { documents_by_status: Record<string, number> };
    if (stats.documents_by_status.pending === 0 && stats.documents_by_status.processing === 0) break;
    if (Date.now() > deadline) throw new Error(`ingestion did not finish: ${JSON.stringify(stats.documents_by_status)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const response = await app.inject({ url: `/v1/collections/${collection}/documents?limit=500`, headers });
  return response.json().data as Array<{ id: string; status: string; error: string | null; chunk_count: number; filename: string }>;
}
