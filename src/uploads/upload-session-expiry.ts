import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../concurrency/periodic-rounds.js';
import type { SqlRunner } from '../plugins.js';
import type { FileStore } from '../storage/file-store.js';
import { expireIdleSessions } from './upload-sessions.service.js';

/** How often idle sessions are looked for. */
const ROUND_INTERVAL_MS = 600_000;

/**
 * Cancels open upload sessions left without a new file for `expiryMs` (0: never), at start and
 * every ten minutes, and removes their files: a client that opened a session and went away kept
 * its files on disk or in the bucket for good. The session stays readable, `cancelled` and
 * `expired`; its client's next request is a 409 saying it expired.
 */
export class UploadSessionExpiry {
  private readonly rounds: PeriodicRounds;

  constructor(private readonly sql: SqlRunner, private readonly files: Pick<FileStore, 'removeMany'>, logger: FastifyBaseLogger, private readonly expiryMs: number) {
    this.rounds = new PeriodicRounds(async () => {
      const expired = await this.expireIdle();
      if (expired > 0) logger.info({ expired }, 'cancelled upload sessions idle past UPLOAD_SESSION_EXPIRY_HOURS and removed their files');
    }, { intervalMs: expiryMs > 0 ? ROUND_INTERVAL_MS : 0, logger, work: 'expiring idle upload sessions', firstRoundAtStart: true });
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }

  /** Expires the sessions idle longer than the expiry as of `now`; returns how many. */
  expireIdle(now = new Date()): Promise<number> {
    return this.expiryMs > 0 ? expireIdleSessions(this.sql, this.files, new Date(now.getTime() - this.expiryMs)) : Promise.resolve(0);
  }
}
