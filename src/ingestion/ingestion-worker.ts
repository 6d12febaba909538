import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';
import { IngestionError, ingestDocuments, type IngestionRuntime } from './ingest-document.js';
import { isDatabaseUnavailable } from '../db/connection-failures.js';
import { ABANDONED_BEFORE_LAST_ATTEMPT, ABANDONED_ON_LAST_ATTEMPT, isLastAttempt, RELEASED_AFTER_DATABASE_OUTAGE, type Job, type JobQueue } from './job-queue.js';
import { takeBackWrittenParts } from './written-parts.js';

const IDLE_POLL_MS = 1000;
/** Beats per job lease (job-queue.ts), so a live worker never loses its jobs to a late beat. */
const HEARTBEATS_PER_LEASE = 4;
/**
 * Jobs claimed at once. Their writes go out as one set of bulk statements, which is what lets the
 * embedded database (~1 ms a statement) ingest hundreds of documents a second.
 */
const CLAIM_BATCH = 64;
/**
 * How long a stop waits for the documents in progress before handing their jobs back: less than
 * the 25 s after which the process exits anyway (main.ts), leaving time to close the rest.
 */
const STOP_WAIT_MS = 15_000;
/** Pauses between tries to hand jobs back while the database is away: doubling from the first to the last. */
const DATABASE_RETRY_FIRST_MS = 250;
const DATABASE_RETRY_LAST_MS = 5000;

/** What a document is told of its failed attempt: failed for good, or waiting for another (and when, if known). */
interface DocumentFailure {
  failed: boolean;
  message: string;
  nextAttemptAt?: Date;
  /** Since when its provider has been unavailable to it, when that is why it waits. */
  waitingSince?: Date;
}

function willRetry(detail: string): string {
  return `${detail} (will retry)`;
}

function isoSeconds(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** `45 s`, `12 min`, `2 h`: how long a provider was waited for. */
function describeDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 120 * 60) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/**
 * In-process workers that claim ingestion jobs from the durable queue. `concurrency` loops run at
 * once; each waits for a notification (an upload in this process) or polls once a second (work
 * enqueued by another replica).
 */
export class IngestionWorker {
  private running = false;
  private readonly loops: Promise<void>[] = [];
  /**
   * Every job this process has claimed and not yet finished, including those of a claim's other
   * collections still waiting for the current one: their leases lapsed while a large document
   * ran, and this process's own sweep took them over and ingested them a second time.
   */
  private readonly held = new Set<string>();
  /**
   * Jobs of a stopped process this one took over and is settling (takeOverAbandoned): renewed as
   * `held` is, but never handed back at a stop, which would give them their attempt again.
   */
  private readonly takingOver = new Set<string>();
  private readonly sleepers = new Set<() => void>();
  /** Whether the last claim failed, so that a run of failures is logged once. */
  private claimsFailing = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly queue: JobQueue,
    private readonly runtime: IngestionRuntime,
    private readonly sql: SqlRunner,
    private readonly logger: FastifyBaseLogger,
    private readonly concurrency: number,
    /** How long a document may wait for a model provider that is unavailable before it fails (PROVIDER_OUTAGE_WAIT_S); 0: such a failure is an attempt like any other. */
    private readonly providerOutageWaitMs: number,
  ) {}

  async start(options: { requeueAllRunning: boolean }): Promise<void> {
    if (this.running || this.concurrency === 0) return;
    // Beating before the first take-over: taking back what a large document's stopped run wrote can
    // outlast a short lease (JOB_LEASE_S), and another replica would take the same jobs over.
    this.heartbeat = setInterval(() => {
      void this.queue.heartbeat([...this.held, ...this.takingOver]).catch((error: unknown) => this.logger.warn({ err: error }, 'job heartbeat failed'));
      if (this.running && !options.requeueAllRunning) void this.takeOverAbandoned(false).catch(() => undefined);
    }, this.queue.leaseMs / HEARTBEATS_PER_LEASE);
    this.heartbeat.unref();
    try {
      await this.takeOverAbandoned(options.requeueAllRunning);
    } catch (error) {
      clearInterval(this.heartbeat);
      throw error;
    }
    await this.takeBackPartsOfFailedDocuments();
    this.running = true;
    this.unsubscribe = this.queue.onNotify(() => this.wakeAll());
    for (let index = 0; index < this.concurrency; index++) this.loops.push(this.loop());
  }

  /**
   * Takes over the jobs a stopped process left running: what their runs wrote is taken back, their
   * documents go back to pending, and the jobs to the queue; those on their last attempt fail, and
   * so do their documents, saying why. A crash on the last attempt left a failed document with
   * every chunk written before it (2,786 of a large file), found by every query.
   */
  private async takeOverAbandoned(all: boolean): Promise<void> {
    const jobs = await this.queue.takeOverAbandoned(all, [...this.held, ...this.takingOver]);
    if (jobs.length === 0) return;
    for (const job of jobs) this.takingOver.add(job.id);
    try {
      await this.takeBackWrittenParts(jobs);
      for (const job of jobs) {
        const lastAttempt = isLastAttempt(job);
        if (lastAttempt) this.logger.error({ jobId: job.id, documentId: job.document_id, attempts: job.attempts }, 'a stopped process left this ingestion job running on its last attempt: failed');
        // Before the job is queued again: told after, the document could already be another run's.
        if (job.document_id) {
          const detail = `processing failed: ${lastAttempt ? ABANDONED_ON_LAST_ATTEMPT : ABANDONED_BEFORE_LAST_ATTEMPT}`;
          await this.tellDocument(job.document_id, { failed: lastAttempt, message: lastAttempt ? detail : willRetry(detail) }, 'processing');
        }
      }
      const { requeued } = await this.queue.settleAbandoned(jobs);
      if (requeued > 0) this.logger.info({ requeued }, 'ingestion jobs left by a stopped process are queued again, to run one at a time');
    } finally {
      for (const job of jobs) this.takingOver.delete(job.id);
    }
  }

  /**
   * A failed document holds nothing, as its failure took back what was written of it; but that
   * take-back can fail (the database away), and documents that failed before take-backs existed
   * kept every chunk: found by queries and counted in stats under a document saying it held none.
   * Whatever such documents still hold is taken back at each start. A failure here is logged and
   * the start goes on: the next start tries again.
   */
  private async takeBackPartsOfFailedDocuments(): Promise<void> {
    try {
      const rows = await this.sql<{ id: string }>(
        `select d.id from documents d where d.status = 'failed' and exists (select 1 from chunks c where c.document_id = d.id)`,
      );
      if (rows.length === 0) return;
      const ids = rows.map((row) => row.id);
      await takeBackWrittenParts(this.runtime, ids);
      await this.sql(`update documents set chunk_count = 0 where id = any(?::uuid[]) and status = 'failed'`, [ids]);
      this.logger.info({ documents: rows.length }, 'chunks that failed documents still held were taken back');
    } catch (error) {
      this.logger.error({ err: error }, 'could not take back the chunks failed documents still hold');
    }
  }

  private wakeAll(): void {
    for (const wake of this.sleepers) wake();
  }

  private async idle(ms = IDLE_POLL_MS): Promise<void> {
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let jobs: Job[] = [];
      try {
        jobs = await this.queue.claim(CLAIM_BATCH);
        if (this.claimsFailing) this.logger.info('ingestion jobs can be claimed again');
        this.claimsFailing = false;
      } catch (error) {
        // Once per run of failures: every loop tries again each second, which during a database
        // outage was an error line per loop and second.
        if (!this.claimsFailing) {
          if (isDatabaseUnavailable(error)) this.logger.warn({ err: error }, 'could not claim ingestion jobs: the database is unavailable; trying again every second');
          else this.logger.error({ err: error }, 'could not claim ingestion jobs; trying again every second');
        }
        this.claimsFailing = true;
      }
      if (jobs.length === 0) {
        await this.idle();
        continue;
      }
      for (const job of jobs) this.held.add(job.id);
      const byCollection = new Map<string, Job[]>();
      for (const job of jobs) {
        const key = job.collection_id ?? '';
        byCollection.set(key, [...(byCollection.get(key) ?? []), job]);
      }
      for (const [collectionId, group] of byCollection) {
        // Stopping: the claim's collections not started yet go back to the queue at once.
        if (!this.running) await this.handBack(group.map((job) => job.id));
        else await this.run(collectionId, group);
      }
    }
  }

  private async run(collectionId: string, jobs: Job[]): Promise<void> {
    const jobByDocument = new Map(jobs.filter((job) => job.document_id).map((job) => [job.document_id!, job]));
    try {
      const outcomes = await ingestDocuments(this.runtime, collectionId, [...jobByDocument.keys()], this.queue.workerId);
      const failed = outcomes.filter((outcome) => outcome.status === 'failed').map((outcome) => ({ job: jobByDocument.get(outcome.documentId)!, failure: outcome.error! }));
      await this.queue.complete(jobs.filter((job) => !failed.some((failure) => failure.job === job)).map((job) => job.id));
      await this.recordFailures(failed.filter(({ failure }) => !failure.databaseUnavailable));
      await this.handBackWhenDatabaseAnswers(failed.filter(({ failure }) => failure.databaseUnavailable).map(({ job }) => job));
    } catch (error) {
      if (isDatabaseUnavailable(error) || (error instanceof IngestionError && error.databaseUnavailable)) {
        await this.handBackWhenDatabaseAnswers(jobs);
        return;
      }
      const failure = error instanceof IngestionError ? error : new IngestionError('processing', error instanceof Error ? error.message : String(error), true);
      await this.recordFailures(jobs.map((job) => ({ job, failure })));
    } finally {
      for (const job of jobs) this.held.delete(job.id);
    }
  }

  /**
   * The database went away under these jobs; nothing is wrong with their documents. They stay held
   * (their heartbeats resume with the database) and are handed back to the queue as soon as it
   * answers, their attempt not counted. Recorded as failures, they used up attempts, and since
   * that record could not be written either, they waited out their lease to be taken over as the
   * jobs of a crashed process, their documents saying "out of memory, killed or crashed". What the
   * attempt wrote stays until the next run replaces it. A stop meanwhile ends the wait.
   */
  private async handBackWhenDatabaseAnswers(jobs: Job[]): Promise<void> {
    if (jobs.length === 0) return;
    const jobIds = jobs.map((job) => job.id);
    this.logger.warn({ jobs: jobIds.length }, 'the database is unavailable: ingestion jobs wait for it, to be queued again once it answers');
    for (let pause = DATABASE_RETRY_FIRST_MS; ; pause = Math.min(pause * 2, DATABASE_RETRY_LAST_MS)) {
      try {
        await this.queue.release(jobIds, RELEASED_AFTER_DATABASE_OUTAGE);
        this.logger.info({ jobs: jobIds.length }, 'the database answers again: ingestion jobs that waited for it are queued again');
        return;
      } catch (error) {
        if (!isDatabaseUnavailable(error)) {
          this.logger.error({ err: error }, 'could not hand ingestion jobs back after the database was unavailable');
          return;
        }
      }
      if (!this.running) return;
      await this.idle(pause);
    }
  }

  /**
   * Fails the jobs (or schedules their retries, or their waits for a provider that is unavailable)
   * and tells their documents why, naming the stage, after taking back what was written of them
   * (by this attempt or an earlier one): a document that failed at parsing on a retry kept the
   * chunks of the attempt handed back before it. Only for jobs this process still holds: one
   * handed back at a stop, or taken over, is another run's now, and so are its document's chunks.
   */
  private async recordFailures(failures: Array<{ job: Job; failure: IngestionError }>): Promise<void> {
    if (failures.length === 0) return;
    // When the database cannot say, the take-back is tried anyway (it fails as well, most likely).
    const held = await this.queue.stillHeld(failures.map(({ job }) => job.id)).catch(() => null);
    await this.takeBackWrittenParts(failures.map(({ job }) => job).filter((job) => !held || held.has(job.id)));
    const waiting: Array<{ collectionId: string | null; detail: string; nextAttemptAt: Date; since: Date }> = [];
    for (const { job, failure } of failures) {
      const detail = `${failure.stage} failed: ${failure.message}`;
      const told = failure.providerUnavailable && this.providerOutageWaitMs > 0
        ? await this.waitForProvider(job, detail, failure.providerUnavailable.retryAfterMs)
        : await this.failOrRetry(job, detail, failure.retryable);
      if (told?.nextAttemptAt && told.waitingSince) waiting.push({ collectionId: job.collection_id, detail, nextAttemptAt: told.nextAttemptAt, since: told.waitingSince });
      // Handed back at a stop (or taken over): the document is another run's now.
      if (told && job.document_id) await this.tellDocument(job.document_id, told, failure.stage);
    }
    if (waiting.length > 0) await this.postponeTheRestOfTheCollections(waiting);
  }

  /**
   * Jobs of the same collections still queued wait for the provider too, until the first of those
   * that found it unavailable is tried again: claimed meanwhile, each claim of 64 was parsed again
   * and spent the client's retries (~7.5 s) to find the same, every pause of the outage. Logged as
   * one line for the batch: a line per document was 64 a claim.
   */
  private async postponeTheRestOfTheCollections(waiting: Array<{ collectionId: string | null; detail: string; nextAttemptAt: Date; since: Date }>): Promise<void> {
    const nextAttemptAt = new Date(Math.min(...waiting.map((wait) => wait.nextAttemptAt.getTime())));
    let postponed = 0;
    for (const collectionId of new Set(waiting.flatMap((wait) => (wait.collectionId ? [wait.collectionId] : [])))) {
      const first = waiting.find((wait) => wait.collectionId === collectionId)!;
      const message = `waiting for the provider (since ${isoSeconds(first.since)}, at most ${describeDuration(this.providerOutageWaitMs)}), `
        + `which another document of the collection found unavailable: ${first.detail}`;
      postponed += await this.queue.postponeQueuedForProvider(collectionId, first.since, nextAttemptAt, message)
        .catch((error: unknown) => {
          this.logger.warn({ err: error, collectionId }, 'could not postpone the collection\'s queued ingestion jobs while its provider is unavailable');
          return 0;
        });
    }
    this.logger.warn({ jobs: waiting.length, postponed, error: waiting[0]!.detail, nextAttemptAt }, 'ingestion jobs wait for their provider, which is unavailable');
  }

  private async failOrRetry(job: Job, detail: string, retryable: boolean): Promise<DocumentFailure | null> {
    const outcome = await this.queue.fail(job, detail, !retryable).catch(() => 'failed' as const);
    this.logger.warn({ jobId: job.id, documentId: job.document_id, outcome, error: detail }, 'ingestion failed');
    if (outcome === 'not held') return null;
    return outcome === 'failed' ? { failed: true, message: detail } : { failed: false, message: willRetry(detail) };
  }

  private async waitForProvider(job: Job, detail: string, retryAfterMs: number | undefined): Promise<DocumentFailure | null> {
    const wait = await this.queue.waitForProvider(job, detail, { retryAfterMs, maxWaitMs: this.providerOutageWaitMs })
      .catch(() => ({ outcome: 'failed', waitedMs: 0 }) as const);
    switch (wait.outcome) {
      case 'not held':
        return null;
      case 'failed': {
        this.logger.warn({ jobId: job.id, documentId: job.document_id, outcome: 'failed', error: detail }, 'ingestion failed: its provider stayed unavailable');
        const waited = wait.waitedMs > 0 ? `the provider was unavailable for ${describeDuration(wait.waitedMs)}, more than PROVIDER_OUTAGE_WAIT_S` : 'the wait for the provider could not be recorded';
        return { failed: true, message: `${detail} (${waited}: not tried again)` };
      }
      case 'waiting':
        return {
          failed: false,
          message: `${detail} (waiting for the provider since ${isoSeconds(wait.since)}, at most ${describeDuration(this.providerOutageWaitMs)})`,
          nextAttemptAt: wait.nextAttemptAt,
          waitingSince: wait.since,
        };
    }
  }

  /**
   * Removes the chunks (rows, vectors, keyword postings) and elements of the jobs' documents. When
   * that fails (the database is away) the document's next run replaces its chunks; one that
   * failed keeps them until it is reprocessed or deleted, which the error logged here says.
   */
  private async takeBackWrittenParts(jobs: Job[]): Promise<void> {
    const documentIds = jobs.flatMap((job) => (job.document_id ? [job.document_id] : []));
    await takeBackWrittenParts(this.runtime, documentIds)
      .catch((error: unknown) => this.logger.error({ err: error, documentIds }, 'could not take back what was written of documents that failed or wait for a retry'));
  }

  /**
   * Sets the document failed, or back to pending when its job will run again, with the reason and
   * the stage that failed: progress writes are throttled, so the stage last written may be an
   * earlier one (a failed embedding still read "parsing"). Its chunks were taken back before
   * (takeBackWrittenParts), so it counts none: a reprocessed document that failed said it held
   * those of its ready version.
   */
  private async tellDocument(documentId: string, told: DocumentFailure, stage: string): Promise<void> {
    const progress: Record<string, unknown> = { message: told.message, stage };
    if (told.nextAttemptAt) progress.next_attempt_at = told.nextAttemptAt.toISOString();
    await this.sql(
      `update documents set ${told.failed ? "status = 'failed', error = ?" : "status = 'pending', error = null"}, chunk_count = 0,
         progress = (coalesce(progress, '{}'::jsonb) - 'next_attempt_at') || ?::jsonb, updated_at = now() where id = ?`,
      [...(told.failed ? [told.message] : []), JSON.stringify(progress), documentId],
    ).catch((updateError: unknown) => this.logger.error({ err: updateError }, 'could not record the failure'));
  }

  private async handBack(jobIds: string[]): Promise<void> {
    await this.queue.release(jobIds).catch((error: unknown) => this.logger.warn({ err: error }, 'could not hand ingestion jobs back'));
    for (const id of jobIds) this.held.delete(id);
  }

  /**
   * Stops claiming work and waits up to `waitMs` for the documents in progress; jobs still held
   * then are handed back to the queue (another replica, or the next start, takes them up without
   * counting the attempt). The work in progress is left to the process's exit.
   */
  async stop(waitMs = STOP_WAIT_MS): Promise<void> {
    this.running = false;
    this.wakeAll();
    this.unsubscribe?.();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), waitMs); });
    const outcome = await Promise.race([Promise.all(this.loops).then(() => 'finished' as const), late]);
    clearTimeout(timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (outcome === 'late' && this.held.size > 0) {
      this.logger.warn({ jobs: this.held.size }, 'ingestion still in progress at shutdown: its jobs are handed back to the queue');
      await this.handBack([...this.held]);
    }
    this.loops.length = 0;
  }
}
