import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';
import type { IngestionError, IngestionRuntime } from './ingest-document.js';
import type { Job, JobQueue } from './job-queue.js';
import { takeBackWrittenParts } from './written-parts.js';

/** A job whose attempt failed, and why. */
export interface FailedJob {
  job: Job;
  failure: IngestionError;
}

/** What a document is told of its job's failed attempt: failed for good, or waiting for another (and when, if known). */
export interface DocumentTold {
  documentId: string;
  /** The stage that failed. */
  stage: string;
  failed: boolean;
  message: string;
  nextAttemptAt?: Date;
}

/** Jobs of a claim that were left waiting for their provider: the earliest of their next attempts, and why. */
interface ProviderWaitOfClaim {
  jobs: number;
  detail: string;
  since: Date;
  nextAttemptAt: Date;
}

/** `embedding failed: openai answered 503: ...`: the failure as its job and document record it. */
function describeFailure(failure: IngestionError): string {
  return `${failure.stage} failed: ${failure.message}`;
}

export function willRetry(detail: string): string {
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
 * Records the failed jobs of a claim: fails them, schedules their retries, or has them wait for a
 * model provider that is unavailable, and tells their documents why. One statement of each kind
 * for the claim, as its writes are: one per job was ~130 statements for a claim of 64 that found
 * its provider down.
 */
export class FailedJobRecorder {
  constructor(
    private readonly queue: JobQueue,
    private readonly runtime: IngestionRuntime,
    private readonly sql: SqlRunner,
    private readonly logger: FastifyBaseLogger,
    /** How long a document may wait for a model provider that is unavailable before it fails (PROVIDER_OUTAGE_WAIT_S); 0: such a failure is an attempt like any other. */
    private readonly providerOutageWaitMs: number,
  ) {}

  /**
   * Records the failures of one collection's jobs after taking back what was written of them (by
   * this attempt or an earlier one): a document that failed at parsing on a retry kept the chunks
   * of the attempt handed back before it. Only for jobs this process still holds: one handed back
   * at a stop, or taken over, is another run's now, and so are its document's chunks.
   */
  async record(collectionId: string, failures: FailedJob[]): Promise<void> {
    if (failures.length === 0) return;
    // When the database cannot say, the take-back is tried anyway (it fails as well, most likely).
    const held = await this.queue.stillHeld(failures.map(({ job }) => job.id)).catch(() => null);
    await this.takeBackWrittenParts(failures.map(({ job }) => job).filter((job) => !held || held.has(job.id)));
    const waitsForProvider = (failed: FailedJob) => this.providerOutageWaitMs > 0 && failed.failure.providerUnavailable !== null;
    const waiting = await this.waitForProvider(failures.filter(waitsForProvider));
    const told = [...await this.failOrRetry(failures.filter((failed) => !waitsForProvider(failed))), ...waiting.told];
    await this.tellDocuments(told);
    if (waiting.claim) await this.postponeTheRestOfTheCollection(collectionId, waiting.claim);
  }

  private async failOrRetry(failures: FailedJob[]): Promise<DocumentTold[]> {
    if (failures.length === 0) return [];
    const detailed = failures.map(({ job, failure }) => ({ job, failure, error: describeFailure(failure), final: !failure.retryable }));
    const outcomes = await this.queue.fail(detailed).catch(() => new Map(failures.map(({ job }) => [job.id, 'failed' as const])));
    const told: DocumentTold[] = [];
    for (const { job, failure, error } of detailed) {
      const outcome = outcomes.get(job.id) ?? 'not held';
      this.logger.warn({ jobId: job.id, documentId: job.document_id, outcome, error }, 'ingestion failed');
      // Not held: handed back at a stop (or taken over), the document is another run's now.
      if (outcome === 'not held' || !job.document_id) continue;
      told.push({ documentId: job.document_id, stage: failure.stage, failed: outcome === 'failed', message: outcome === 'failed' ? error : willRetry(error) });
    }
    return told;
  }

  private async waitForProvider(failures: FailedJob[]): Promise<{ told: DocumentTold[]; claim: ProviderWaitOfClaim | null }> {
    if (failures.length === 0) return { told: [], claim: null };
    const detailed = failures.map(({ job, failure }) => ({ job, failure, error: describeFailure(failure), retryAfterMs: failure.providerUnavailable?.retryAfterMs }));
    const waits = await this.queue.waitForProvider(detailed, this.providerOutageWaitMs)
      .catch(() => new Map(failures.map(({ job }) => [job.id, { outcome: 'failed', waitedMs: 0 } as const])));
    const told: DocumentTold[] = [];
    let claim: ProviderWaitOfClaim | null = null;
    for (const { job, failure, error } of detailed) {
      // Not held: handed back at a stop (or taken over), the document is another run's now.
      const wait = waits.get(job.id);
      if (!wait) continue;
      if (wait.outcome === 'failed') {
        this.logger.warn({ jobId: job.id, documentId: job.document_id, outcome: 'failed', error }, 'ingestion failed: its provider stayed unavailable');
        const waited = wait.waitedMs > 0 ? `the provider was unavailable for ${describeDuration(wait.waitedMs)}, more than PROVIDER_OUTAGE_WAIT_S` : 'the wait for the provider could not be recorded';
        if (job.document_id) told.push({ documentId: job.document_id, stage: failure.stage, failed: true, message: `${error} (${waited}: not tried again)` });
        continue;
      }
      if (job.document_id) {
        told.push({
          documentId: job.document_id, stage: failure.stage, failed: false, nextAttemptAt: wait.nextAttemptAt,
          message: `${error} (waiting for the provider since ${isoSeconds(wait.since)}, at most ${describeDuration(this.providerOutageWaitMs)})`,
        });
      }
      if (!claim) claim = { jobs: 0, detail: error, since: wait.since, nextAttemptAt: wait.nextAttemptAt };
      claim.jobs += 1;
      if (wait.nextAttemptAt < claim.nextAttemptAt) claim.nextAttemptAt = wait.nextAttemptAt;
    }
    return { told, claim };
  }

  /**
   * The collection's jobs still queued wait for the provider too, until the first of those that
   * found it unavailable is tried again: claimed meanwhile, each claim of 64 was parsed again and
   * spent the client's retries (~7.5 s) to find the same, every pause of the outage. Logged as one
   * line for the claim: a line per document was 64 a claim.
   */
  private async postponeTheRestOfTheCollection(collectionId: string, claim: ProviderWaitOfClaim): Promise<void> {
    const message = `waiting for the provider (since ${isoSeconds(claim.since)}, at most ${describeDuration(this.providerOutageWaitMs)}), `
      + `which another document of the collection found unavailable: ${claim.detail}`;
    const postponed = await this.queue.postponeQueuedForProvider(collectionId, claim.since, claim.nextAttemptAt, message)
      .catch((error: unknown) => {
        this.logger.warn({ err: error, collectionId }, 'could not postpone the collection\'s queued ingestion jobs while its provider is unavailable');
        return 0;
      });
    this.logger.warn({ jobs: claim.jobs, postponed, error: claim.detail, nextAttemptAt: claim.nextAttemptAt }, 'ingestion jobs wait for their provider, which is unavailable');
  }

  /**
   * Removes the chunks (rows, vectors, keyword postings) and elements of the jobs' documents. When
   * that fails (the database is away) the document's next run replaces its chunks; one that
   * failed keeps them until it is reprocessed or deleted, which the error logged here says.
   */
  async takeBackWrittenParts(jobs: Job[]): Promise<void> {
    const documentIds = jobs.flatMap((job) => (job.document_id ? [job.document_id] : []));
    await takeBackWrittenParts(this.runtime, documentIds)
      .catch((error: unknown) => this.logger.error({ err: error, documentIds }, 'could not take back what was written of documents that failed or wait for a retry'));
  }

  /**
   * Sets the documents failed, or back to pending when their jobs will run again, with the reason
   * and the stage that failed, in one statement: progress writes are throttled, so the stage last
   * written may be an earlier one (a failed embedding still read "parsing"). Their chunks were
   * taken back before (takeBackWrittenParts), so they count none: a reprocessed document that
   * failed said it held those of its ready version.
   */
  async tellDocuments(told: DocumentTold[]): Promise<void> {
    if (told.length === 0) return;
    const rows = told.map(({ documentId, stage, failed, message, nextAttemptAt }) => ({
      id: documentId, failed, message,
      progress: { message, stage, ...(nextAttemptAt ? { next_attempt_at: nextAttemptAt.toISOString() } : {}) },
    }));
    await this.sql(
      `update documents d set status = case when t.failed then 'failed' else 'pending' end, error = case when t.failed then t.message end,
         chunk_count = 0, progress = (coalesce(d.progress, '{}'::jsonb) - 'next_attempt_at') || t.progress, updated_at = now()
       from jsonb_to_recordset(?::jsonb) as t(id uuid, failed boolean, message text, progress jsonb) where d.id = t.id`,
      [JSON.stringify(rows)],
    ).catch((updateError: unknown) => this.logger.error({ err: updateError }, 'could not record the failure'));
  }
}
