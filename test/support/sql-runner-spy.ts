import type { EntityManager } from '@mikro-orm/postgresql';
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

type Forkable = { fork(): EntityManager };

/**
 * `db.fork` whose connections call `before` with each statement ahead of `execute`; a throw from
 * `before` fails the statement.
 */
export function forkWithExecuteSpy(db: Forkable, before: (query: string) => void): () => EntityManager {
  return () => {
    const connection = db.fork().getConnection();
    return {
      getConnection: () => ({
        execute: async (...args: Parameters<typeof connection.execute>) => {
          before(String(args[0]));
          return connection.execute(...args);
        },
      }),
    } as unknown as EntityManager;
  };
}
