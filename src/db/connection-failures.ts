import { DriverException } from '@mikro-orm/core';
import { isNetworkErrorCode } from '../network-failures.js';

/**
 * SQLSTATEs that say the server or the connection failed, not the statement: connection
 * exceptions (class 08), a login refused (class 28), the database gone (3D000), too many
 * connections (53300), and the server shutting down or starting up (57P01-57P03).
 */
const SERVER_STATES = /^(08...|28...|3D000|53300|57P0[123])$/;

/** Whether an error's code says the connection to PostgreSQL failed (unreachable, refused, ended). */
export function failedAtTheConnection(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && (isNetworkErrorCode(code) || (typeof code === 'string' && SERVER_STATES.test(code)));
}

/** pg's words for a connection that ended under a statement, and knex's for a pool with none free in time. */
const LOST_CONNECTION = /Connection terminated unexpectedly|Timeout acquiring a connection/;

/** A statement outside MikroORM's entity manager (the SQL runner, the write-lock session) lost or could not get its connection. */
export class DatabaseConnectionError extends Error {
  readonly code: unknown;

  constructor(failure: Error) {
    // Not as `cause`: the log's error serializer would repeat the same message after it.
    super(failure.message);
    this.name = 'DatabaseConnectionError';
    this.code = (failure as { code?: unknown }).code;
  }
}

/** Whether `error`, from knex or a pg client, is its connection failing. */
function isLostConnection(error: unknown): error is Error {
  return error instanceof Error && (failedAtTheConnection(error) || LOST_CONNECTION.test(error.message));
}

/** `error` from knex or a pg client of the service's own, as DatabaseConnectionError when its connection failed, else unchanged. */
export function markLostConnection(error: unknown): unknown {
  return isLostConnection(error) ? new DatabaseConnectionError(error) : error;
}

/**
 * A statement that failed because the database could not be reached, not because of the
 * statement: PostgreSQL down or restarting, its connections ended, or none free in the pool in
 * time. Only MikroORM's driver errors and DatabaseConnectionError count, so that a file store's
 * ECONNREFUSED is not taken for the database's.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseConnectionError) return true;
  // The pool had no connection free in time: MikroORM passes knex's error on unwrapped.
  if (error instanceof Error && error.name === 'KnexTimeoutError') return true;
  return error instanceof DriverException && isLostConnection(error);
}
