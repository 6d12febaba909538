import fs from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite/vector';
import { pg_freespacemap } from '@electric-sql/pglite/contrib/pg_freespacemap';
import { MikroORM, type EntityManager, type Options } from '@mikro-orm/postgresql';
import { PGliteDriver, type PGliteConnectionConfig } from 'mikro-orm-pglite';
import { inspect } from 'node:util';
import type { Logger } from 'pino';
import { StartRefusal } from '../errors.js';
import { availableBytes, megabytes } from '../storage/disk-space.js';
import { failedAtTheConnection } from './connection-failures.js';
import { lockDataDirectory, type DataDirectoryLock } from './data-dir-lock.js';
import { entities } from './entities/index.js';
import { migrateToLatest } from './migrate-to-latest.js';

export interface DatabaseOptions {
  /** PostgreSQL URL; undefined selects PGlite. */
  databaseUrl?: string | undefined;
  /** PGlite data directory; undefined keeps the embedded database in memory (tests). */
  dataDir?: string | undefined;
  /**
   * An in-memory embedded database starts as a copy of this archive (PGlite's dumpDataDir) instead
   * of an empty cluster: tests start from a migrated copy, which skips initdb and the migrations
   * (0.7 s against 1.6 s an app).
   */
  loadDataDir?: Blob | undefined;
  debug?: boolean;
  /** Where the connection pool's own warnings go (a connection PostgreSQL ended, for one); without it, to stdout. */
  logger?: Logger | undefined;
}

export const DATABASE_KINDS = ['pglite', 'postgresql'] as const;

export interface Database {
  orm: MikroORM;
  kind: typeof DATABASE_KINDS[number];
  /** A fresh EntityManager fork: one per unit of work; only the SQL runner shares one, for statements outside transactions. */
  fork(): EntityManager;
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** PostgreSQL could not be reached or refused the service's login. */
export class DatabaseUnavailableError extends StartRefusal {}

/**
 * Less free space than the embedded database needs to start: it writes its log at start, and on a
 * full disk it aborts ("RuntimeError: Aborted()"), which says nothing of why.
 */
const EMBEDDED_START_MIN_FREE_BYTES = 64 * 1024 * 1024;

/** The embedded database could not open for want of disk space. */
export class EmbeddedDatabaseDiskFullError extends StartRefusal {}

/** `error`, or why it happened when the embedded database's disk has (almost) no space left. */
async function explainedByFullDisk(error: unknown, dataDir: string | undefined): Promise<unknown> {
  // A refusal that says its own reason (the directory held by another process) stands.
  if (error instanceof StartRefusal || dataDir === undefined) return error;
  const free = await availableBytes(dataDir).catch(() => null);
  if (free === null || free >= EMBEDDED_START_MIN_FREE_BYTES) return error;
  return new EmbeddedDatabaseDiskFullError(`the embedded database in ${dataDir} could not open: the disk holding it has ${megabytes(free)} MB free `
    + `(${error instanceof Error ? error.message : String(error)}); free space (the database needs some to start) and start again`);
}

/**
 * Whether opening failed at the connection (failedAtTheConnection), or at creating the missing
 * database (MikroORM creates it) without the privilege to (42501).
 */
function couldNotOpen(error: unknown): error is Error {
  return error instanceof Error && (failedAtTheConnection(error) || (error as { code?: unknown }).code === '42501');
}

/** Where DATABASE_URL points, without its user and password. */
function describeDatabaseUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  return `${url.hostname}:${url.port || '5432'}, database ${decodeURIComponent(url.pathname.slice(1))}`;
}

/**
 * knex writes its pool's warnings ("Connection Error: Connection ended unexpectedly" when
 * PostgreSQL restarts) as plain text with console.log, in between the service's JSON log lines,
 * unless it is given functions to write them with.
 */
function poolLog(logger: Logger) {
  const write = (level: 'debug' | 'warn' | 'error') => (message: unknown) =>
    logger[level]({ component: 'database pool' }, typeof message === 'string' ? message : inspect(message));
  return { debug: write('debug'), warn: write('warn'), error: write('error'), deprecate: write('warn') };
}

function commonOptions(): Partial<Options> {
  return {
    entities,
    migrations: { silent: true, transactional: true, allOrNothing: true, tableName: 'schema_migrations' },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    // Timestamps are always set explicitly by the services.
    discovery: { warnWhenNoEntities: false },
  };
}

/**
 * Session defaults of every connection for pgvector's HNSW scans (plugins/vector-store/pgvector):
 * ef_search 100 (recall@10 0.94 against 0.92 at pgvector's default 40, STACK.md) and iterative
 * scans, which keep walking the graph until enough rows pass a filter. Set once per connection,
 * a search is one statement instead of a transaction that sets them locally (four round trips).
 */
export const vectorSearchSessionSettings = { 'hnsw.ef_search': '100', 'hnsw.iterative_scan': 'relaxed_order' } as const;

/**
 * Embedded-database settings: `wal_init_zero` off lets PostgreSQL start a WAL segment without first
 * writing its 16 MB of zeros (~10 % of ingestion time on PGlite, bench/search/ingest-profile.ts).
 */
const pgliteSessionSettings = { ...vectorSearchSessionSettings, wal_init_zero: 'off' };

async function openPglite(dataDir: string | undefined, loadDataDir: Blob | undefined): Promise<PGlite> {
  // PGlite needs the parent of its data directory to exist.
  if (dataDir !== undefined) await fs.mkdir(path.dirname(dataDir), { recursive: true });
  const pglite = await PGlite.create({ ...(dataDir === undefined ? { loadDataDir } : { dataDir }), extensions: { vector, pg_freespacemap } });
  // Reads the space of deleted rows that the disk check counts as room (embedded-database-free-space.ts).
  await pglite.exec('create extension if not exists pg_freespacemap');
  for (const [name, value] of Object.entries(pgliteSessionSettings)) await pglite.query('select set_config($1, $2, false)', [name, value]);
  return pglite;
}

/**
 * MikroORM inlines parameter values into the SQL text, and PGlite's knex dialect treats any raw SQL
 * containing ";" as several statements (answering one row list per statement), so a value such as
 * "a; b" broke ordinary queries. Here only semicolons outside string literals count.
 */
function sendSingleStatementsAsOne(orm: MikroORM): void {
  const client = orm.em.getConnection().getKnex().client as {
    _query(connection: { query(sql: string, bindings: unknown[]): Promise<unknown>; exec(sql: string): Promise<unknown> }, obj: { sql: string; bindings?: unknown[]; method?: string; response?: unknown }): Promise<unknown>;
  };
  client._query = async (connection, obj) => {
    const statements = obj.sql.replace(/'(?:[^']|'')*'/g, "''").split(';').filter((part) => part.trim().length > 0);
    obj.response = obj.method === 'raw' && statements.length > 1 ? await connection.exec(obj.sql) : await connection.query(obj.sql, obj.bindings ?? []);
    return obj;
  };
}

/**
 * Text of any language is stored and searched, and the document list folds names with
 * `normalize()`, which PostgreSQL refuses outside UTF8: a SQL_ASCII database took uploads and then
 * answered such listings with 500s. PGlite is always UTF8.
 */
async function refuseNonUnicodeDatabase(orm: MikroORM): Promise<void> {
  const [row] = await orm.em.getConnection().execute<Array<{ server_encoding: string }>>('show server_encoding');
  const encoding = row?.server_encoding;
  if (encoding !== 'UTF8') {
    throw new Error(`the database's encoding is ${encoding}; the service needs a UTF8 database (create it with: create database <name> encoding 'UTF8' template template0)`);
  }
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  // Before PGlite touches the directory: a second process on it loses one side's writes.
  const lock = options.databaseUrl || options.dataDir === undefined ? undefined : await lockDataDirectory(options.dataDir)
    .catch(async (error: unknown) => { throw await explainedByFullDisk(error, options.dataDir); });
  let orm: MikroORM | undefined;
  let pglite: PGlite | undefined;
  try {
    if (options.databaseUrl) {
      orm = await MikroORM.init({
        ...commonOptions(),
        clientUrl: options.databaseUrl,
        pool: { min: 0, max: 10 },
        driverOptions: {
          connection: { options: Object.entries(vectorSearchSessionSettings).map(([name, value]) => `-c ${name}=${value}`).join(' ') },
          ...(options.logger ? { log: poolLog(options.logger) } : {}),
        },
        debug: options.debug ?? false,
      });
    } else {
      pglite = await openPglite(options.dataDir, options.loadDataDir);
      const instance = pglite;
      orm = await MikroORM.init({
        ...commonOptions(),
        driver: PGliteDriver,
        dbName: 'postgres',
        driverOptions: { connection: { pglite: () => instance } satisfies PGliteConnectionConfig, ...(options.logger ? { log: poolLog(options.logger) } : {}) },
        debug: options.debug ?? false,
      } as unknown as Options);
    }
    if (pglite) sendSingleStatementsAsOne(orm);
    if (options.databaseUrl) await refuseNonUnicodeDatabase(orm);
    await migrateToLatest(orm, options.databaseUrl);
  } catch (error) {
    await closeAfterFailedOpen(orm, pglite, lock);
    if (options.databaseUrl && couldNotOpen(error)) {
      const reason = error.message || (error as { code?: string }).code;
      throw new DatabaseUnavailableError(`could not open PostgreSQL at ${describeDatabaseUrl(options.databaseUrl)} (DATABASE_URL): ${reason}`);
    }
    throw await explainedByFullDisk(error, options.dataDir);
  }
  return databaseHandle(orm, pglite, lock);
}

/** A start that failed half-way closes what it opened, then lets the next start have the directory. */
async function closeAfterFailedOpen(orm: MikroORM | undefined, pglite: PGlite | undefined, lock: DataDirectoryLock | undefined): Promise<void> {
  await orm?.close(true).catch(() => undefined);
  if (pglite && !pglite.closed) await pglite.close().catch(() => undefined);
  await lock?.release();
}

function databaseHandle(orm: MikroORM, pglite: PGlite | undefined, lock: DataDirectoryLock | undefined): Database {
  const kind = pglite ? 'pglite' : 'postgresql';
  return {
    orm,
    kind,
    fork: () => orm.em.fork(),
    async ping(timeoutMs = 2000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`database did not answer within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([orm.em.getConnection().execute('select 1'), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      try {
        await orm.close(true);
        // The ORM borrowed the PGlite instance, so it is closed here, after the ORM.
        if (pglite && !pglite.closed) await pglite.close();
      } finally {
        // Also after a failed close: this process is done with the directory either way.
        await lock?.release();
      }
    },
  };
}
