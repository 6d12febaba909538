import type { SqlRunner } from '../../src/plugins.js';

/**
 * Waits until some backend of the service waits for a lock held by the PostgreSQL backend `pid` (a
 * client of the test holding rows), so a race test knows the service's statement is where it wants it.
 */
export async function waitUntilBlockedBy(sql: SqlRunner, pid: number, what = 'the request waits for the test\'s transaction'): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    const [blocked] = await sql<{ count: number }>('select count(*)::int as count from pg_stat_activity where ?::int = any(pg_blocking_pids(pid))', [pid]);
    if (blocked!.count > 0) return;
    if (waited > 10_000) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits until `backends` backends of the database wait for a lock (of whomever), or times out. */
export async function waitUntilLockWaits(sql: SqlRunner, backends: number): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    const [waiting] = await sql<{ count: number }>(
      "select count(*)::int as count from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()",
    );
    if (waiting!.count >= backends) return;
    if (waited > 10_000) throw new Error(`timed out waiting until ${backends} backends wait for a lock`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
