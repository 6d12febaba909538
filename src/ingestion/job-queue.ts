import type { SqlRunner } from '../plugins.js';

/** Jobs are inserted where their subject is created (see createDocuments), in the same statement. */
export type JobKind = 'ingest_document';

export interface Job {
  id: string;
  kind: JobKind;
  collection_id: string | null;
  document_id: string | null;
  payload: Record<string, unknown>;
  attempts: number;
  max_attempts: number;
  /** The size of the job's original document, as claimed (claim): what it will take on disk is a multiple of it. */
  document_bytes?: number | string | null;
}

/** How long a claimed job may go without a heartbeat before another worker may take it over (JOB_LEASE_S). */
export const JOB_LEASE_MS = 60_000;

/** Why a document whose job was handed back at a graceful stop waits for a worker. */
export const RELEASED_AT_STOP = 'the process working on it was stopped';

/** Why a document waits for a worker while the disk is nearly full: its job handed back, or not claimed. */
export const WAITING_FOR_DISK_SPACE = 'the disk holding DATA_DIR is nearly full (MIN_FREE_DISK_MB): it is ingested once space is freed';

/** Why a document whose job was handed back after the database went away under it waits for a worker. */
export const RELEASED_AFTER_DATABASE_OUTAGE = 'the database was unavailable while it was processed';

/** Why a document waits for another attempt after its process stopped while working on it. */
export const ABANDONED_BEFORE_LAST_ATTEMPT = 'the service stopped while this was being processed (out of memory, killed or crashed)';

export const ABANDONED_ON_LAST_ATTEMPT =
  'the service stopped while this was being processed, on its last attempt (out of memory, killed or crashed); not tried again';

/** Whether a job that stops now is not run again (settleAbandoned fails it). */
export function isLastAttempt(job: Job): boolean {
  return job.attempts >= job.max_attempts;
}

/** A failed attempt of a held job to record (JobQueue.fail): `final` when no retry can mend it. */
export interface JobFailure {
  job: Job;
  error: string;
  final: boolean;
}

/** A held job whose model provider was unavailable (JobQueue.waitForProvider), and how long it asked to be left alone. */
export interface ProviderFailure {
  job: Job;
  error: string;
  retryAfterMs: number | undefined;
}

/** How a job whose provider was unavailable was recorded (JobQueue.waitForProvider). */
export type ProviderWait =
  | { outcome: 'waiting'; since: Date; nextAttemptAt: Date }
  | { outcome: 'failed'; waitedMs: number };

/**
 * Pauses of a job waiting for its provider: from the first (or a twentieth of the wait allowed, when
 * shorter), half as long as it has waited, up to the last; so a document is ingested at most about
 * half an outage's length after the provider is back.
 */
const PROVIDER_PAUSE_FIRST_MS = 15_000;
const PROVIDER_PAUSE_LAST_MS = 5 * 60_000;

export interface AbandonedJobs {
  requeued: number;
  /** Jobs that were on their last attempt: failed with ABANDONED_ON_LAST_ATTEMPT. */
  failed: Job[];
}

/**
 * A durable job table claimed with `FOR UPDATE SKIP LOCKED`, so that several workers (threads of
 * this process, or other replicas on PostgreSQL) share the work and a crash loses nothing.
 */
export class JobQueue {
  private readonly listeners = new Set<() => void>();

  constructor(private readonly sql: SqlRunner, readonly workerId: string, readonly leaseMs = JOB_LEASE_MS) {}

  /** Wakes idle workers after a commit that enqueued work. */
  notify(): void {
    for (const listener of this.listeners) listener();
  }

  onNotify(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Claims up to `limit` queued jobs, oldest first; a job a stopped process left running is
   * claimed alone (see requeueAbandoned).
   */
  async claim(limit: number): Promise<Job[]> {
    return this.sql<Job>(
      `with alone as (
         select id from jobs where status = 'queued' and abandoned > 0 and run_after <= now()
         order by run_after limit 1 for update skip locked),
       batch as (
         select id from jobs where status = 'queued' and run_after <= now() and not exists (select 1 from alone)
         order by run_after, created_at limit ? for update skip locked)
       update jobs set status = 'running', locked_by = ?, locked_at = now(), attempts = attempts + 1, updated_at = now()
       where id in (select id from alone union all select id from batch)
       returning id, kind, collection_id, document_id, payload, attempts, max_attempts,
         (select d.size_bytes from documents d where d.id = jobs.document_id) as document_bytes`,
      [limit, this.workerId],
    );
  }

  async heartbeat(jobIds: string[]): Promise<void> {
    if (jobIds.length === 0) return;
    await this.sql(`update jobs set locked_at = now() where id = any(?::uuid[]) and locked_by = ?`, [jobIds, this.workerId]);
  }

  /**
   * Finishes jobs this process still holds. Only the holder may: a job handed back at a stop, or
   * taken over after its lease lapsed, belongs to whoever claimed it next, and the run that let it
   * go must not mark it done (or failed) under them.
   */
  async complete(jobIds: string[]): Promise<void> {
    if (jobIds.length === 0) return;
    await this.sql(`update jobs set status = 'done', locked_by = null, updated_at = now() where id = any(?::uuid[]) and locked_by = ?`, [jobIds, this.workerId]);
  }

  /**
   * Hands jobs this process holds back to the queue, as they were before it claimed them (the
   * attempt is not counted, nor are they taken for abandoned), and their documents back to
   * pending: a graceful stop. Without it a stop during a long ingestion left them running until
   * their lease lapsed or the next start, each time costing an attempt. `reason` is what the
   * documents' progress says they wait for a worker after.
   */
  async release(jobIds: string[], reason = RELEASED_AT_STOP): Promise<void> {
    if (jobIds.length === 0) return;
    await this.sql(
      `with released as (
         update jobs set status = 'queued', locked_by = null, attempts = greatest(attempts - 1, 0), run_after = now(), updated_at = now()
         where id = any(?::uuid[]) and locked_by = ? and status = 'running'
         returning document_id)
       update documents set status = 'pending', updated_at = now(),
         progress = jsonb_build_object('stage', 'queued', 'percent', 0, 'message', ?::text)
       where id in (select document_id from released) and status in ('pending', 'processing')`,
      [jobIds, this.workerId, `waiting for a worker (${reason})`],
    );
  }

  /**
   * Says in their progress why the queued documents wait for a worker (`reason`), in one statement:
   * those not waiting for a retry or for their provider, whose progress says so already. Returns how many.
   */
  async tellQueuedWhyTheyWait(reason: string): Promise<number> {
    const rows = await this.sql<{ id: string }>(
      `update documents d set progress = jsonb_build_object('stage', 'queued', 'percent', 0, 'message', ?::text), updated_at = now()
       from jobs j where j.document_id = d.id and j.status = 'queued' and j.last_error is null and j.provider_unavailable_since is null
         and d.status = 'pending' returning d.id`,
      [`waiting for a worker (${reason})`],
    );
    return rows.length;
  }

  /**
   * Records failures of jobs this process holds, in one statement: each runs again after a backoff
   * (2^attempts s) unless it is final or out of attempts. A job missing from the answer was handed
   * back or taken over meanwhile, and nothing was recorded of it.
   */
  async fail(failures: JobFailure[]): Promise<Map<string, 'retry' | 'failed'>> {
    if (failures.length === 0) return new Map();
    const rows = await this.sql<{ id: string; status: string }>(
      `update jobs j set status = case when f.final or j.attempts >= j.max_attempts then 'failed' else 'queued' end,
         last_error = f.error, locked_by = null, run_after = now() + power(2, j.attempts) * interval '1 second',
         provider_unavailable_since = null, updated_at = now()
       from jsonb_to_recordset(?::jsonb) as f(id uuid, error text, final boolean)
       where j.id = f.id and j.locked_by = ? returning j.id, j.status`,
      [JSON.stringify(failures.map(({ job, error, final }) => ({ id: job.id, error, final }))), this.workerId],
    );
    return new Map(rows.map((row) => [row.id, row.status === 'failed' ? 'failed' : 'retry']));
  }

  /**
   * Queues again jobs this process holds whose model provider is unavailable, in one statement,
   * their attempts not counted: each after as long as its provider asked (`retryAfterMs`, its
   * Retry-After), else after a pause half as long as the job has waited so far (within
   * PROVIDER_PAUSE_FIRST_MS and PROVIDER_PAUSE_LAST_MS). A job the provider has been unavailable to
   * for longer than `maxWaitMs` fails instead. Counted as attempts, such failures failed every
   * document being ingested after a 30 s outage, and a 429 asking for two minutes after 6 s. A job
   * missing from the answer was handed back or taken over meanwhile, and nothing was recorded of it.
   */
  async waitForProvider(failures: ProviderFailure[], maxWaitMs: number): Promise<Map<string, ProviderWait>> {
    if (failures.length === 0) return new Map();
    const firstPauseMs = Math.min(PROVIDER_PAUSE_FIRST_MS, maxWaitMs / 20);
    const rows = await this.sql<{ id: string; status: string; since: Date | string; run_after: Date | string; waited_ms: number | string }>(
      `with failure as (select * from jsonb_to_recordset(?::jsonb) as f(id uuid, error text, retry_after_ms double precision)),
       held as (
         select id, coalesce(provider_unavailable_since, now()) as since from jobs
         where id in (select id from failure) and locked_by = ? and status = 'running' for update),
       waited as (
         select h.id, h.since, f.error, coalesce(f.retry_after_ms, 0) as retry_after_ms, extract(epoch from now() - h.since) * 1000 as waited_ms
         from held h join failure f on f.id = h.id)
       update jobs j set
         provider_unavailable_since = w.since,
         status = case when w.waited_ms > ?::double precision then 'failed' else 'queued' end,
         attempts = case when w.waited_ms > ?::double precision then j.attempts else greatest(j.attempts - 1, 0) end,
         run_after = now() + greatest(w.retry_after_ms, least(greatest(w.waited_ms / 2, ?::double precision), ?::double precision)) * interval '1 millisecond',
         last_error = w.error, locked_by = null, updated_at = now()
       from waited w where j.id = w.id
       returning j.id, j.status, w.since, j.run_after, w.waited_ms`,
      [
        JSON.stringify(failures.map(({ job, error, retryAfterMs }) => ({ id: job.id, error, retry_after_ms: retryAfterMs ?? null }))),
        this.workerId, maxWaitMs, maxWaitMs, firstPauseMs, PROVIDER_PAUSE_LAST_MS,
      ],
    );
    return new Map(rows.map((row): [string, ProviderWait] => [
      row.id,
      row.status === 'failed' ? { outcome: 'failed', waitedMs: Number(row.waited_ms) } : { outcome: 'waiting', since: new Date(row.since), nextAttemptAt: new Date(row.run_after) },
    ]));
  }

  /**
   * Postpones the collection's queued jobs due before `nextAttemptAt` to then, as waiting for the
   * provider since `since` (unless they already were): a job of the collection found the provider
   * unavailable, and they need the same. Their documents' progress says so (`message`). Jobs that
   * wait for a retry after a failure of their own (a file store that was away, say) keep their
   * time: they may not need the provider, and they do not wait for it. Returns how many.
   */
  async postponeQueuedForProvider(collectionId: string, since: Date, nextAttemptAt: Date, message: string): Promise<number> {
    const at = nextAttemptAt.toISOString();
    const rows = await this.sql<{ id: string }>(
      `with postponed as (
         update jobs set run_after = ?::timestamptz, provider_unavailable_since = coalesce(provider_unavailable_since, ?::timestamptz), updated_at = now()
         where collection_id = ? and status = 'queued' and run_after < ?::timestamptz
           and (last_error is null or provider_unavailable_since is not null)
         returning document_id)
       update documents set progress = jsonb_build_object('stage', 'queued', 'percent', 0, 'message', ?::text, 'next_attempt_at', ?::text), updated_at = now()
       where id in (select document_id from postponed) and status = 'pending' returning id`,
      [at, since.toISOString(), collectionId, at, message, at],
    );
    return rows.length;
  }

  /**
   * Tries now the jobs of a collection (or of one document) that wait for their provider: after the
   * collection's key changed, or at a user's request (reprocess). Their documents' progress says
   * so. Returns how many.
   */
  async retryWaitingForProvider(collectionId: string, documentId?: string): Promise<number> {
    const rows = await this.sql<{ id: string }>(
      `with woken as (
         update jobs set run_after = now(), updated_at = now()
         where collection_id = ? ${documentId ? 'and document_id = ?' : ''} and status = 'queued' and provider_unavailable_since is not null and run_after > now()
         returning document_id)
       update documents set progress = progress || jsonb_build_object('next_attempt_at', ?::text), updated_at = now()
       where id in (select document_id from woken) returning id`,
      [collectionId, ...(documentId ? [documentId] : []), new Date().toISOString()],
    );
    if (rows.length > 0) this.notify();
    return rows.length;
  }

  /**
   * Which of these jobs this process still holds: not handed back at a stop, nor taken over by
   * another run after their lease lapsed.
   */
  async stillHeld(jobIds: string[]): Promise<Set<string>> {
    if (jobIds.length === 0) return new Set();
    const rows = await this.sql<{ id: string }>(`select id from jobs where id = any(?::uuid[]) and locked_by = ? and status = 'running'`, [jobIds, this.workerId]);
    return new Set(rows.map((row) => row.id));
  }

  /**
   * Takes over the jobs of a process that stopped while running them: every running job when
   * `all` (the embedded database has one process, so at start nothing else can be running), else
   * those whose lease lapsed, except `ownJobIds`: this process's own, whose heartbeats could not
   * reach the database for a while (it was away). They stay `running`, held by this process and
   * counted as abandoned, until settleAbandoned: queued again at once, one could be claimed (here or by another replica)
   * while what its stopped run wrote was still being taken back, and the new run's chunks went too.
   */
  async takeOverAbandoned(all: boolean, ownJobIds: string[] = []): Promise<Job[]> {
    return this.sql<Job>(
      `update jobs set locked_by = ?, locked_at = now(), abandoned = abandoned + 1, updated_at = now()
       where status = 'running' and not (id = any(?::uuid[]))${all ? '' : " and locked_at < now() - (? || ' milliseconds')::interval"}
       returning id, kind, collection_id, document_id, payload, attempts, max_attempts`,
      all ? [this.workerId, ownJobIds] : [this.workerId, ownJobIds, String(this.leaseMs)],
    );
  }

  /**
   * Queues again abandoned jobs this process took over (takeOverAbandoned). Such a job may be what
   * stopped its process (a file that exhausts memory): it is claimed alone from now on, so it takes
   * no other job down with it, and one on its last attempt (isLastAttempt) fails instead of stopping
   * every start.
   */
  async settleAbandoned(jobs: Job[]): Promise<AbandonedJobs> {
    if (jobs.length === 0) return { requeued: 0, failed: [] };
    const rows = await this.sql<Job & { status: string }>(
      `update jobs set status = case when attempts >= max_attempts then 'failed' else 'queued' end,
         last_error = case when attempts >= max_attempts then ? else last_error end, locked_by = null, updated_at = now()
       where id = any(?::uuid[]) and locked_by = ? and status = 'running'
       returning id, kind, collection_id, document_id, payload, attempts, max_attempts, status`,
      [ABANDONED_ON_LAST_ATTEMPT, jobs.map((job) => job.id), this.workerId],
    );
    return { requeued: rows.filter((row) => row.status === 'queued').length, failed: rows.filter((row) => row.status === 'failed') };
  }

  async pendingCount(): Promise<number> {
    const [row] = await this.sql<{ count: number | string }>(`select count(*) as count from jobs where status in ('queued', 'running')`);
    return Number(row?.count ?? 0);
  }
}
