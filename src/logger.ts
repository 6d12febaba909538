import { DriverException } from '@mikro-orm/core';
import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * The process logger. Every `{err}` it writes, the services' and each request's (Fastify's request
 * loggers are its children and keep its serializers), goes through `serializeError`.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, serializers: { err: serializeError }, redact: { paths: CREDENTIAL_PATHS, censor: '[redacted]' } }, destination);
}

/**
 * Request headers that carry credentials, wherever a logged object holds headers: @fastify/multipart
 * logs every upload's headers at trace (`busboyOptions.headers`), API key and session cookie included.
 */
const CREDENTIAL_PATHS = ['authorization', 'cookie', '["set-cookie"]', '["x-api-key"]', '["proxy-authorization"]']
  .flatMap((header) => [`headers${header.startsWith('[') ? '' : '.'}${header}`, `*.headers${header.startsWith('[') ? '' : '.'}${header}`]);

/** What a database error may say in the log: names of database objects, never values. */
const DATABASE_OBJECT_FIELDS = ['schema', 'table', 'column', 'dataType', 'constraint'] as const;
const SQLSTATE = /^[0-9A-Z]{5}$/;

interface DatabaseErrorFields {
  code?: unknown;
  severity?: unknown;
  detail?: unknown;
  hint?: unknown;
}

/**
 * pino's standard serializer, except for database errors. knex prefixes a failed statement's text,
 * its values bound in, to the message ("insert into users ... values (..., '$argon2id$...') - duplicate
 * key ..."), which the stack repeats; PGlite adds the statement as `query` and `params`, and
 * PostgreSQL's `detail` echoes key values ("Key (email)=(a@example.com) already exists"). A
 * database error is logged as its type, SQLSTATE, the objects it names and PostgreSQL's own message.
 */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error) || !isDatabaseError(error)) return pino.stdSerializers.err(error as Error);
  const { code } = error as DatabaseErrorFields;
  // PGlite's error class is minified ("C"); pg's and PGlite's are both DatabaseError.
  const type = error instanceof DriverException ? error.constructor.name : 'DatabaseError';
  const message = postgresMessage(error);
  const frames = (error.stack ?? '').split('\n').filter((line) => line.trim().startsWith('at '));
  const serialized: Record<string, unknown> = { type, message, stack: [`${type}: ${message}`, ...frames].join('\n') };
  if (typeof code === 'string' || typeof code === 'number') serialized.code = code;
  for (const field of DATABASE_OBJECT_FIELDS) {
    const name = (error as unknown as Record<string, unknown>)[field];
    if (typeof name === 'string') serialized[field] = name;
  }
  return serialized;
}

/**
 * MikroORM's exceptions (a DriverException wraps every error of a driver, also those without a
 * statement, such as a refused connection), and PostgreSQL's own errors, which reach the service
 * unconverted through the SQL runner (knex directly): those carry PostgreSQL's SQLSTATE and severity.
 */
function isDatabaseError(error: Error): boolean {
  if (error instanceof DriverException) return true;
  const { code, severity } = error as DatabaseErrorFields;
  return typeof severity === 'string' && typeof code === 'string' && SQLSTATE.test(code);
}

/**
 * PostgreSQL's message out of `<statement> - <message>`, MikroORM's "\n - detail: ..." and
 * "\n - hint: ..." taken off its end. The last " - " is the one knex added or one inside
 * PostgreSQL's message, never one of the statement's values; a message without a statement (a
 * refused connection) is kept whole.
 */
function postgresMessage(error: Error & DatabaseErrorFields): string {
  let message = error.message;
  for (const [label, value] of [['hint', error.hint], ['detail', error.detail]] as const) {
    const suffix = `\n - ${label}: ${String(value)}`;
    if (value !== undefined && value !== null && message.endsWith(suffix)) message = message.slice(0, -suffix.length);
  }
  const statementEnd = message.lastIndexOf(' - ');
  return statementEnd === -1 ? message : message.slice(statementEnd + ' - '.length);
}
