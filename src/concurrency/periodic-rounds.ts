import type { FastifyBaseLogger } from 'fastify';

/**
 * Background work done in rounds every `intervalMs` (0: never), one round at a time: a round still
 * running when the next is due is not doubled. A failing round is logged as a warn line the first
 * time only (one a round would flood the log while, say, the database is down), then at debug
 * level, and its next success says it works again.
 */
export class PeriodicRounds {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failing = false;

  /** `work` names the work in log lines: "vacuuming the tables" gives "vacuuming the tables works again". */
  constructor(
    private readonly round: () => Promise<void>,
    private readonly options: { intervalMs: number; logger: FastifyBaseLogger; work: string; firstRoundAtStart?: boolean },
  ) {}

  /** The first round comes one interval later, or at once with `firstRoundAtStart`. */
  start(): void {
    if (this.timer || this.options.intervalMs <= 0) return;
    const runRound = () => {
      this.running ??= this.attempt().finally(() => { this.running = undefined; });
    };
    this.timer = setInterval(runRound, this.options.intervalMs);
    this.timer.unref();
    if (this.options.firstRoundAtStart) runRound();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private async attempt(): Promise<void> {
    const { logger, work } = this.options;
    try {
      await this.round();
      if (this.failing) logger.info(`${work} works again`);
      this.failing = false;
    } catch (error) {
      if (this.failing) logger.debug({ err: error }, `${work} failed again`);
      else logger.warn({ err: error }, `${work} failed; retried each round (further failures are logged at debug level)`);
      this.failing = true;
    }
  }
}
