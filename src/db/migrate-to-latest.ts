import type { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { loadMigrations, migrationNames } from './migrations/index.js';

/** Any fixed number: the key of the advisory lock replicas take around migrations. */
const MIGRATION_LOCK_KEY = 4_207_311_991;

/** The migrations the database has not recorded as run, oldest first. */
export async function pendingMigrations(orm: MikroORM): Promise<string[]> {
  const connection = orm.em.getConnection();
  const [table] = await connection.execute<Array<{ found: string | null }>>("select to_regclass('schema_migrations')::text as found");
  if (!table?.found) return [...migrationNames];
  const applied = new Set((await connection.execute<Array<{ name: string }>>('select name from schema_migrations')).map((row) => row.name));
  return migrationNames.filter((name) => !applied.has(name));
}

/**
 * Runs the pending migrations. The migrator and the migrations are imported only when some are
 * pending: a restart of the built service on embedded data took 1.52-1.58 s instead of 1.65-1.71 s
 * (with the AWS SDK left out as well, create-file-store.ts).
 */
async function runPendingMigrations(orm: MikroORM): Promise<void> {
  const [{ Migrator }, migrationsList] = await Promise.all([import('@mikro-orm/migrations'), loadMigrations()]);
  orm.config.set('migrations', { ...orm.config.get('migrations'), migrationsList });
  Migrator.register(orm);
  await orm.getMigrator().up();
}

/**
 * Replicas started together on one PostgreSQL database (a fresh deploy, an upgrade with a new
 * migration) each ran the pending migrations; all but one then failed on the objects the first
 * had created, and exited. The lock makes them take turns: later ones find nothing left to run. It
 * is held on a connection of its own, since the migrator's statements use the pool's.
 */
async function whileHoldingMigrationLock(databaseUrl: string, migrate: () => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await migrate();
  } finally {
    await client.end();
  }
}

/** Brings the database's schema up to date; `databaseUrl` for PostgreSQL, where replicas take turns. */
export async function migrateToLatest(orm: MikroORM, databaseUrl?: string): Promise<void> {
  if ((await pendingMigrations(orm)).length === 0) return;
  if (databaseUrl) await whileHoldingMigrationLock(databaseUrl, () => runPendingMigrations(orm));
  else await runPendingMigrations(orm);
}
