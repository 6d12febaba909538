import type { SqlRunner } from '../../src/plugins.js';

/** Asks `count` every 20 ms until it reaches `atLeast`; throws after 10 s naming `what`. */
async function waitUntilCount(count: () => Promise<number>, atLeast: number, what: string): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    if (await count() >= atLeast) return;
    if (waited > 10_000) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Waits until some backend of the service waits for a lock held by the PostgreSQL backend `pid` (a
 * client of the test holding rows), so a race test knows the service's statement is where it wants it.
 */
export function waitUntilBlockedBy(sql: SqlRunner, pid: number, what = 'the request waits for the test\'s transaction'): Promise<void> {
  return waitUntilCount(async () => (await sql<{ count: number }>(
    'select count(*)::int as count from pg_stat_activity where ?::int = any(pg_blocking_pids(pid))', [pid],
  ))[0]!.count, 1, what);
}

/** Waits until `backends` backends of the database wait for a lock (of whomever). */
export function waitUntilLockWaits(sql: SqlRunner, backends: number): Promise<void> {
  return waitUntilCount(async () => (await sql<{ count: number }>(
    "select count(*)::int as count from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()",
  ))[0]!.count, backends, `${backends} backends wait for a lock`);
}
