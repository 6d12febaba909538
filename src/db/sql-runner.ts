import { setImmediate as nextEventLoopTurn, setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SqlRunner } from '../plugins.js';
import { markLostConnection } from './connection-failures.js';
import type { Database } from './database.js';

/**
 * Raw SQL for plugins and bulk paths (knex `?` placeholders; write a literal jsonb `?` operator
 * as `\\?` or use `jsonb_exists`). MikroORM's unit of work roughly doubles bulk insert time, so
 * chunk and index writes go through here. Statements go to knex directly, with the values bound:
 * MikroORM's own `execute` inlines them into the SQL text, escaping character by character, which
 * made a 2 MB batch of chunk text 2.8 times slower to send.
 */
export function createSqlRunner(db: Database): SqlRunner {
  const run = (em: EntityManager) => async <Row>(query: string, params: unknown[] = []): Promise<Row[]> => {
    await letWaitingRequestsIn();
    let statement = em.getConnection().getKnex().raw(query, params.map(arrayToLiteral) as never[]);
    const transaction = em.getTransactionContext();
    if (transaction) statement = statement.transacting(transaction);
    const result = (await statement.catch(rethrowMarked)) as { rows?: Row[] } | Array<{ rows?: Row[] }>;
    // PGlite answers a multi-statement text with one result per statement; the last one counts.
    const last = Array.isArray(result) ? result[result.length - 1] : result;
    return last?.rows ?? [];
  };
  // Statements outside a transaction only borrow the fork's connection, so one fork serves them all
  // (a fork per statement was ~0.06 ms of every query on the embedded database).
  const outsideTransaction = run(db.fork());
  const runner = (async <Row>(query: string, params: unknown[] = []) => retryingDeadlocks(() => outsideTransaction<Row>(query, params))) as SqlRunner;
  Object.assign(runner, {
    dialect: db.kind,
    transaction: <T>(work: Parameters<SqlRunner['transaction']>[0]) =>
      db.fork().transactional((tx) => work(run(tx)) as Promise<T>),
  });
  return runner;
}

/** Retries after a deadlock: 3, each after a random 10-60 ms, so the two sides do not meet again at once. */
const DEADLOCK_RETRIES = 3;

/**
 * PostgreSQL ends one statement of a deadlock (SQLSTATE 40P01) and lets the other finish. Outside a
 * transaction the ended statement was rolled back whole, so it is run again, as PostgreSQL's
 * documentation advises. A collection truncated while raw vectors replaced some of its rows
 * deadlocked this way (the delete and the upsert lock the same rows in other orders) and the upsert
 * was a 500. Statements inside `transaction` are not retried alone: their transaction is aborted,
 * and a caller whose transaction may be run again whole wraps it in this.
 */
export async function retryingDeadlocks<T>(statement: () => Promise<T>): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await statement();
    } catch (error) {
      if (!isDeadlock(error) || retry >= DEADLOCK_RETRIES) throw error;
      await sleep(10 + Math.random() * 50);
    }
  }
}

export function isDeadlock(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '40P01';
}

/** Raw knex errors, unlike MikroORM's, are not told apart: a lost connection is marked so that callers tell it from a failed statement. */
function rethrowMarked(error: unknown): never {
  throw markLostConnection(error);
}

/** How long statements may follow one another before the event loop gets a turn. */
const MAX_TURN_MS = 50;
let turnStartedAt = performance.now();

/**
 * PGlite runs a statement synchronously and resolves it with a microtask, so a long chain of
 * statements (a large document's elements and chunks, thousands of rows a statement) never lets
 * the event loop run: /health waited 24 s while a 50 MB file was written. Every 50 ms, the next
 * statement first waits for a turn of the event loop, in which waiting requests are taken in.
 */
async function letWaitingRequestsIn(): Promise<void> {
  if (performance.now() - turnStartedAt < MAX_TURN_MS) return;
  await nextEventLoopTurn();
  turnStartedAt = performance.now();
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
