import type { SqlRunner } from '../../src/plugins.js';
import { waitUntil } from './wait-until.js';

/**
 * Waits until some backend of the service waits for a lock held by the PostgreSQL backend `pid` (a
 * client of the test holding rows), so a race test knows the service's statement is where it wants it.
 */
export function waitUntilBlockedBy(sql: SqlRunner, pid: number, what = 'the request waits for the test\'s transaction'): Promise<void> {
  return waitUntil(async () => (await sql<{ count: number }>(
    'select count(*)::int as count from pg_stat_activity where ?::int = any(pg_blocking_pids(pid))', [pid],
  ))[0]!.count > 0, what);
}

/** Waits until `backends` backends of the database wait for a lock (of whomever). */
export function waitUntilLockWaits(sql: SqlRunner, backends: number): Promise<void> {
  return waitUntil(async () => (await sql<{ count: number }>(
    "select count(*)::int as count from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()",
  ))[0]!.count >= backends, `${backends} backends wait for a lock`);
}
