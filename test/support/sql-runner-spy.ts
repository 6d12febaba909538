import type { SqlRunner } from '../../src/plugins.js';

/** `sql` with `before` called ahead of each statement; a throw from `before` fails the statement. */
export function sqlRunnerWith(sql: SqlRunner, before: (query: string) => void): SqlRunner {
  return Object.assign(async (query: string, params?: unknown[]) => {
    before(query);
    return sql(query, params);
  }, { dialect: sql.dialect, transaction: sql.transaction }) as SqlRunner;
}

/** `sql` whose first statement containing `text` fails with "database away". */
export function failingOnce(sql: SqlRunner, text: string): SqlRunner {
  let failed = false;
  return sqlRunnerWith(sql, (query) => {
    if (failed || !query.includes(text)) return;
    failed = true;
    throw new Error('database away');
  });
}
