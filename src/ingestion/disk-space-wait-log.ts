import type { FastifyBaseLogger } from 'fastify';

/** A wait that begins this soon after the last one ended is said only once it has lasted as long. */
const QUIET_MS = 60_000;

/**
 * What the log says of ingestion waiting for disk space. Near the margin each document used the
 * room another had freed, and ingestion went from waiting to going on and back once a document,
 * a warn and an info line each time (4 warn lines in 7 s on a nearly full tmpfs). Now a wait that
 * begins within QUIET_MS of the last one's end is said only once it has lasted QUIET_MS, and a
 * wait's end only when its start was said: one warn and one info line however often ingestion
 * flips, and a wait that holds is still reported.
 */
export class DiskSpaceWaitLog {
  private waitStartedAt: number | undefined;
  private said = false;
  private lastEndedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly logger: FastifyBaseLogger, private readonly now: () => number = Date.now) {}

  /** Ingestion waits now; true when this wait has just begun. */
  waiting(shortage: string): boolean {
    const now = this.now();
    const begins = this.waitStartedAt === undefined;
    const startedAt = this.waitStartedAt ?? now;
    this.waitStartedAt = startedAt;
    if (begins) this.said = false;
    if (!this.said && (startedAt - this.lastEndedAt >= QUIET_MS || now - startedAt >= QUIET_MS)) {
      this.logger.warn(`${shortage}: ingestion waits until space is freed`);
      this.said = true;
    }
    return begins;
  }

  /** Ingestion goes on. */
  ended(): void {
    if (this.waitStartedAt === undefined) return;
    if (this.said) this.logger.info('there is disk space again: ingestion goes on');
    this.waitStartedAt = undefined;
    this.lastEndedAt = this.now();
  }
}
