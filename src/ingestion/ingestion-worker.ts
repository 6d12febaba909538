import type { FastifyBaseLogger } from 'fastify';
import type { SqlRunner } from '../plugins.js';
import { IngestionError, ingestDocuments, type IngestionRuntime } from './ingest-document.js';
import { isDatabaseUnavailable } from '../db/connection-failures.js';
import {
  ABANDONED_BEFORE_LAST_ATTEMPT, ABANDONED_ON_LAST_ATTEMPT, isLastAttempt, RELEASED_AFTER_DATABASE_OUTAGE, WAITING_FOR_DISK_SPACE, type Job, type JobQueue,
} from './job-queue.js';
import { takeBackWrittenParts } from './written-parts.js';
import { FailedJobRecorder, willRetry, type DocumentTold } from './failed-jobs.js';
import type { DiskSpaceGuard } from '../storage/disk-space.js';
import { DiskSpaceWaitLog } from './disk-space-wait-log.js';

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
/**
 * What ingesting a document may take on disk, per byte of its original: chunk text with its
 * overlap, a vector and keyword postings per chunk, their indexes, and the write-ahead log of all
 * of it. Measured on the embedded database with the local embedder: 56 text files of 1.1 MB took
 * 779 MB (12.6 per byte); 2,000 files of 27 KB took 19 per byte before the service checkpointed the
 * log every EMBEDDED_CHECKPOINT_WAL_MB, 11.5 with it (bench/documents/wal-size.ts). Kept above: a
 * claim that outgrows the room fills the disk.
 */
const STORED_BYTES_PER_ORIGINAL_BYTE = 16;

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
  private readonly diskSpaceWaitLog: DiskSpaceWaitLog;
  /** Disk space the loops' claims in progress may still take (STORED_BYTES_PER_ORIGINAL_BYTE): not free for the next claim. */
  private reservedBytes = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private readonly failedJobs: FailedJobRecorder;

  constructor(
    private readonly queue: JobQueue,
    private readonly runtime: IngestionRuntime,
    private readonly sql: SqlRunner,
    private readonly logger: FastifyBaseLogger,
    private readonly concurrency: number,
    /** How long a document may wait for a model provider that is unavailable before it fails (PROVIDER_OUTAGE_WAIT_S); 0: such a failure is an attempt like any other. */
    providerOutageWaitMs: number,
    /** DATA_DIR's disk, when ingestion writes to it (the embedded database or vector store); null when it writes elsewhere. */
    private readonly diskSpace: DiskSpaceGuard | null,
  ) {
    this.failedJobs = new FailedJobRecorder(queue, runtime, sql, logger, providerOutageWaitMs);
    this.diskSpaceWaitLog = new DiskSpaceWaitLog(logger);
  }

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
      await this.failedJobs.takeBackWrittenParts(jobs);
      const told: DocumentTold[] = [];
      for (const job of jobs) {
        const lastAttempt = isLastAttempt(job);
        if (lastAttempt) this.logger.error({ jobId: job.id, documentId: job.document_id, attempts: job.attempts }, 'a stopped process left this ingestion job running on its last attempt: failed');
        const detail = `processing failed: ${lastAttempt ? ABANDONED_ON_LAST_ATTEMPT : ABANDONED_BEFORE_LAST_ATTEMPT}`;
        if (job.document_id) told.push({ documentId: job.document_id, stage: 'processing', failed: lastAttempt, message: lastAttempt ? detail : willRetry(detail) });
      }
      // Before the jobs are queued again: told after, a document could already be another run's.
      await this.failedJobs.tellDocuments(told);
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

  /**
   * Keeps the claim's jobs whose documents fit in the disk's room (MIN_FREE_DISK_MB kept free, less
   * what the other loops' claims may still take), in order, and reserves it; the others go back to
   * the queue, their documents saying why. The embedded database on a full disk stops answering
   * at all, and one claim of 53 documents of 300 KB, ingested at once, filled a disk from 17 MB
   * free to none. A document too large for the room does not hold back smaller ones behind it.
   */
  private async withinDiskRoom(jobs: Job[]): Promise<{ fitting: Job[]; reservedBytes: number }> {
    if (!this.diskSpace) return { fitting: jobs, reservedBytes: 0 };
    const neededFor = (job: Job) => Number(job.document_bytes ?? 0) * STORED_BYTES_PER_ORIGINAL_BYTE;
    const diskRoom = await this.diskSpace.roomBytes(this.reservedBytes + jobs.reduce((sum, job) => sum + neededFor(job), 0));
    // The other loops' reservations as they are now, after the reading's await.
    const room = diskRoom - this.reservedBytes;
    if (!Number.isFinite(room)) return { fitting: jobs, reservedBytes: 0 };
    const fitting: Job[] = [];
    const beyond: Job[] = [];
    let reservedBytes = 0;
    for (const job of jobs) {
      if (reservedBytes + neededFor(job) > room) {
        beyond.push(job);
        continue;
      }
      fitting.push(job);
      reservedBytes += neededFor(job);
    }
    // Reserved before anything else is awaited, so that another loop's claim sees it.
    this.reservedBytes += reservedBytes;
    if (beyond.length > 0) await this.handBack(beyond.map((job) => job.id), WAITING_FOR_DISK_SPACE);
    if (fitting.length === 0) {
      const smallest = Math.min(...beyond.map(neededFor));
      await this.waitForDiskSpace(`${await this.diskSpace.describeShortage(0, this.reservedBytes + smallest)} after the next document (${Math.ceil(smallest / 1024 / 1024)} MB to ingest)`);
    }
    return { fitting, reservedBytes };
  }

  /**
   * Waits a while for space to be freed. Said in the log (see DiskSpaceWaitLog) and, once per
   * wait, in the queued documents' progress: they said only "waiting for a worker".
   */
  private async waitForDiskSpace(shortage: string): Promise<void> {
    if (this.diskSpaceWaitLog.waiting(shortage)) {
      await this.queue.tellQueuedWhyTheyWait(WAITING_FOR_DISK_SPACE)
        .catch((error: unknown) => this.logger.warn({ err: error }, 'could not tell the queued documents that they wait for disk space'));
    }
    await this.idle();
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
      // No claim without room: the claim's fit is judged against a reading taken after it.
      const diskRoom = this.diskSpace ? await this.diskSpace.roomBytes(this.reservedBytes) : Number.POSITIVE_INFINITY;
      if (this.diskSpace && diskRoom - this.reservedBytes <= 0) {
        await this.waitForDiskSpace(await this.diskSpace.describeShortage(0, this.reservedBytes));
        continue;
      }
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
      const { fitting, reservedBytes } = await this.withinDiskRoom(jobs);
      if (fitting.length === 0) continue;
      this.diskSpaceWaitLog.ended();
      try {
        await this.runClaim(fitting);
      } finally {
        this.reservedBytes -= reservedBytes;
      }
    }
  }

  private async runClaim(jobs: Job[]): Promise<void> {
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

  private async run(collectionId: string, jobs: Job[]): Promise<void> {
    const jobByDocument = new Map(jobs.filter((job) => job.document_id).map((job) => [job.document_id!, job]));
    try {
      const outcomes = await ingestDocuments(this.runtime, collectionId, [...jobByDocument.keys()], this.queue.workerId);
      const failed = outcomes.filter((outcome) => outcome.status === 'failed').map((outcome) => ({ job: jobByDocument.get(outcome.documentId)!, failure: outcome.error! }));
      await this.queue.complete(jobs.filter((job) => !failed.some((failure) => failure.job === job)).map((job) => job.id));
      await this.failedJobs.record(collectionId, failed.filter(({ failure }) => !failure.databaseUnavailable));
      await this.handBackWhenDatabaseAnswers(failed.filter(({ failure }) => failure.databaseUnavailable).map(({ job }) => job));
    } catch (error) {
      if (isDatabaseUnavailable(error) || (error instanceof IngestionError && error.databaseUnavailable)) {
        await this.handBackWhenDatabaseAnswers(jobs);
        return;
      }
      const failure = error instanceof IngestionError ? error : new IngestionError('processing', error instanceof Error ? error.message : String(error), true);
      await this.failedJobs.record(collectionId, jobs.map((job) => ({ job, failure })));
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

  private async handBack(jobIds: string[], reason?: string): Promise<void> {
    await this.queue.release(jobIds, reason).catch((error: unknown) => this.logger.warn({ err: error }, 'could not hand ingestion jobs back'));
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
