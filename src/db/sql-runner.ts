import type { EntityManager } from '@mikro-orm/postgresql';
import type { SqlRunner } from '../plugins.js';
import type { Database } from './database.js';

/**
 * Raw SQL for plugins and bulk paths (knex `?` placeholders; write a literal jsonb `?` operator
 * as `\\?` or use `jsonb_exists`). MikroORM's unit of work roughly doubles bulk insert time, so
 * chunk and index writes go through here.
 */
export function createSqlRunner(db: Database): SqlRunner {
  const run = (em: EntityManager) => async <Row>(query: string, params: unknown[] = []): Promise<Row[]> =>
    em.getConnection().execute(query, params.map(arrayToLiteral), 'all', em.getTransactionContext()) as Promise<Row[]>;
  const runner = (async <Row>(query: string, params: unknown[] = []) => run(db.fork())<Row>(query, params)) as SqlRunner;
  Object.assign(runner, {
    dialect: db.kind,
    transaction: <T>(work: Parameters<SqlRunner['transaction']>[0]) =>
      db.fork().transactional((tx) => work(run(tx)) as Promise<T>),
  });
  return runner;
}

function quoteElement(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  return `"${String(value).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/**
 * knex expands an array binding into a list (`?` → `$1, $2`), so arrays are sent as PostgreSQL
 * array literals instead: write `?::text[]` or `?::bigint[]` and pass a JavaScript array.
 */
export function arrayToLiteral(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return `{${value.map(quoteElement).join(',')}}`;
}
