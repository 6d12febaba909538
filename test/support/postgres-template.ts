/**
 * A migrated PostgreSQL database kept on the test server as a template: a test app's scratch
 * database is copied from it (CREATE DATABASE ... TEMPLATE) instead of running every migration,
 * which cost 0.5-1 s of each PostgreSQL app's start against about 0.1 s for the check on a copy.
 * The name carries a hash of the migrations' sources and of the code that opens the database, so a
 * changed migration makes a new template; tests of migrations themselves start from empty
 * databases (createScratchDatabase without a template).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';

const MIGRATIONS = fileURLToPath(new URL('../../src/db/migrations/', import.meta.url));
const OPEN_DATABASE = fileURLToPath(new URL('../../src/db/database.ts', import.meta.url));

let template: Promise<string> | undefined;

/** The name of the migrated template database on the server of `baseUrl`; made on first use when absent. */
export function migratedPostgresTemplate(baseUrl: string): Promise<string> {
  template ??= findOrMakeTemplate(baseUrl);
  return template;
}

async function templateName(): Promise<string> {
  const hash = createHash('sha256').update(await readFile(OPEN_DATABASE));
  for (const name of (await readdir(MIGRATIONS)).sort()) hash.update(name).update(await readFile(path.join(MIGRATIONS, name)));
  return `rs_template_${hash.digest('hex').slice(0, 16)}`;
}

async function findOrMakeTemplate(baseUrl: string): Promise<string> {
  const name = await templateName();
  if (await databaseExists(baseUrl, name)) return name;
  // Test processes starting together each build one under a name of their own; the first rename
  // wins, so a copy never starts from a database still being migrated.
  const building = `${name}_${randomBytes(4).toString('hex')}`;
  await runOnServer(baseUrl, `create database ${building}`);
  const url = new URL(baseUrl);
  url.pathname = `/${building}`;
  try {
    await (await openDatabase({ databaseUrl: url.toString() })).close();
    await runOnServer(baseUrl, `alter database ${building} rename to ${name}`);
    // A copy fails while anything is connected to its template: closed to connections, as template0 is.
    await runOnServer(baseUrl, `alter database ${name} with is_template true allow_connections false`);
  } catch (error) {
    await runOnServer(baseUrl, `drop database if exists ${building} with (force)`);
    if (!await databaseExists(baseUrl, name)) throw error;
  }
  return name;
}

async function databaseExists(baseUrl: string, name: string): Promise<boolean> {
  const rows = await runOnServer(baseUrl, 'select 1 from pg_database where datname = $1', [name]);
  return rows.length > 0;
}

async function runOnServer(baseUrl: string, sql: string, values: unknown[] = []): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}
