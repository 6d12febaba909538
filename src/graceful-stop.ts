import type { FastifyBaseLogger } from 'fastify';

export interface StoppableParts {
  /** Stops accepting connections and answers the requests in flight. */
  http: { close(): Promise<unknown> };
  /** Workers, buffered writes and indexes. */
  services: { stop(): Promise<void> };
  database: { close(): Promise<void> };
}

/** Runs every step in order, also those after one that failed; returns what failed. */
export async function runEveryStep(steps: Array<() => Promise<unknown>>): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failures.push(error);
    }
  }
  return failures;
}

/** Throws what `runEveryStep` returned: the one failure itself, several as one AggregateError. */
export function throwFailures(failures: unknown[], what: string): void {
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) {
    const messages = failures.map((failure) => (failure instanceof Error ? failure.message : String(failure)));
    throw new AggregateError(failures, `${failures.length} ${what} failed: ${messages.join('; ')}`);
  }
}

/**
 * Stops the HTTP server, then the services, then the database, each even when an earlier one
 * failed: the database is closed cleanly (no recovery at the next start) whatever went wrong
 * before. Returns the process exit code: 0, or 1 when a step failed.
 */
export async function stopGracefully(parts: StoppableParts, logger: FastifyBaseLogger): Promise<number> {
  const failures = await runEveryStep([() => parts.http.close(), () => parts.services.stop(), () => parts.database.close()]);
  for (const failure of failures) logger.error({ err: failure }, 'a shutdown step failed');
  const exitCode = failures.length === 0 ? 0 : 1;
  logger.info({ exitCode }, exitCode === 0 ? 'stopped' : 'stopped after a failed shutdown step');
  return exitCode;
}
