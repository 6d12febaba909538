import type { FastifyBaseLogger } from 'fastify';

export interface StoppableParts {
  /** Stops accepting connections and answers the requests in flight. */
  http: { close(): Promise<unknown> };
  /**
   * `stopWork`: background work stops taking more (ingestion hands back what outlasts its wait);
   * `stop`: workers, buffered writes and indexes.
   */
  services: { stopWork(): Promise<void>; stop(): Promise<void> };
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
 * Stops the HTTP server while background work stops, then the services, then the database, each
 * even when an earlier one failed: the database is closed cleanly (no recovery at the next start)
 * whatever went wrong before. Work stops as the server drains, not after: workers took more jobs
 * while a slow upload finished, then waited for them, past the 25 s the process allows itself.
 * Returns the process exit code: 0, or 1 when a step failed.
 */
export async function stopGracefully(parts: StoppableParts, logger: FastifyBaseLogger): Promise<number> {
  const drain = async () => {
    const settled = await Promise.allSettled([parts.http.close(), parts.services.stopWork()]);
    throwFailures(settled.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : [])), 'steps of draining');
  };
  const failures = await runEveryStep([drain, () => parts.services.stop(), () => parts.database.close()]);
  for (const failure of failures) logger.error({ err: failure }, 'a shutdown step failed');
  const exitCode = failures.length === 0 ? 0 : 1;
  logger.info({ exitCode }, exitCode === 0 ? 'stopped' : 'stopped after a failed shutdown step');
  return exitCode;
}
