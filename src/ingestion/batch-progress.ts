import type { DocumentProgress } from '../db/entities/index.js';

/**
 * The progress of a batch's documents, written at most once an interval, the latest report last.
 * A report that comes sooner is written when the interval ends: otherwise the batch showed the
 * stage before for as long as the next report took ("parsing" through a provider call of
 * minutes). A new stage after the batch's first interval is written at once (indexing hid behind
 * embedding's frequent updates). Nothing is written within the first interval: a small batch is
 * done before anyone looks, and every write is a statement of the batch's.
 */
export class BatchProgress {
  private readonly startedAt = Date.now();
  private lastWriteAt = this.startedAt;
  /** The stage the claim wrote. */
  private lastStage = 'parsing';
  private pending: DocumentProgress | null = null;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private finished = false;

  constructor(
    private readonly write: (progress: DocumentProgress) => Promise<void>,
    private readonly intervalMs: number,
  ) {}

  async report(progress: DocumentProgress): Promise<void> {
    if (this.finished) return;
    const now = Date.now();
    const newStage = progress.stage !== this.lastStage && now - this.startedAt >= this.intervalMs;
    if (newStage || now - this.lastWriteAt >= this.intervalMs) return this.flush(progress);
    this.pending = progress;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      // Progress is advisory: a failed write is the batch's own statements' failure too, reported there.
      if (this.pending && !this.finished) this.flush(this.pending).catch(() => undefined);
    }, this.lastWriteAt + this.intervalMs - now).unref();
  }

  /** Ends the reports: a trailing write due later is dropped, one under way is awaited. */
  async finish(): Promise<void> {
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.writing.catch(() => undefined);
  }

  private flush(progress: DocumentProgress): Promise<void> {
    this.pending = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.lastWriteAt = Date.now();
    this.lastStage = progress.stage;
    this.writing = this.writing.catch(() => undefined).then(() => this.write(progress));
    return this.writing;
  }
}
