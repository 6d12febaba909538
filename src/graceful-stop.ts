import type { FastifyBaseLogger } from 'fastify';

export interface StoppableParts {
  /** Stops accepting connections and answers the requests in flight. */
  http: { close(): Promise<unknown> };
  /** Workers, buffered writes and indexes; logs each step that fails itself. */
  services: { stop(): Promise<void> };
  database: { close(): Promise<void> };
}

/**
 * Stops the HTTP server, then the services, then the database, each even when an earlier one
 * failed: the database is closed cleanly (no recovery at the next start) whatever went wrong
 * before. Returns the process exit code: 0, or 1 when a step failed.
 */
export async function stopGracefully(parts: StoppableParts, logger: FastifyBaseLogger): Promise<number> {
  let exitCode = 0;
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['http', () => parts.http.close()],
    ['services', () => parts.services.stop()],
    ['database', () => parts.database.close()],
  ];
  for (const [step, run] of steps) {
    try {
      await run();
    } catch (error) {
      exitCode = 1;
      // The services log the step of theirs that failed; logging it here again would say it twice.
      if (step !== 'services') logger.error({ err: error, step }, 'a shutdown step failed');
    }
  }
  logger.info({ exitCode }, exitCode === 0 ? 'stopped' : 'stopped after a failed shutdown step');
  return exitCode;
}
