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
}

/** How long a claimed job may go without a heartbeat before another worker may take it over. */
export const JOB_LEASE_MS = 60_000;

/**
 * A durable job table claimed with `FOR UPDATE SKIP LOCKED`, so that several workers (threads of
 * this process, or other replicas on PostgreSQL) share the work and a crash loses nothing.
 */
export class JobQueue {
  private readonly listeners = new Set<() => void>();

  constructor(private readonly sql: SqlRunner, readonly workerId: string) {}

  /** Wakes idle workers after a commit that enqueued work. */
  notify(): void {
    for (const listener of this.listeners) listener();
  }

  onNotify(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async claim(limit: number): Promise<Job[]> {
    return this.sql<Job>(
      `update jobs set status = 'running', locked_by = ?, locked_at = now(), attempts = attempts + 1, updated_at = now()
       where id in (
         select id from jobs where status = 'queued' and run_after <= now()
         order by run_after, created_at limit ? for update skip locked)
       returning id, kind, collection_id, document_id, payload, attempts, max_attempts`,
      [this.workerId, limit],
    );
  }

  async heartbeat(jobIds: string[]): Promise<void> {
    if (jobIds.length === 0) return;
    await this.sql(`update jobs set locked_at = now() where id = any(?::uuid[]) and locked_by = ?`, [jobIds, this.workerId]);
  }

  async complete(jobIds: string[]): Promise<void> {
    if (jobIds.length === 0) return;
    await this.sql(`update jobs set status = 'done', locked_by = null, updated_at = now() where id = any(?::uuid[])`, [jobIds]);
  }

  /** Records a failure; the job runs again after a backoff unless it is final or out of attempts. */
  async fail(job: Job, error: string, final: boolean): Promise<'retry' | 'failed'> {
    const outcome = final || job.attempts >= job.max_attempts ? 'failed' : 'retry';
    const backoffSeconds = 2 ** job.attempts;
    await this.sql(
      `update jobs set status = ?, last_error = ?, locked_by = null, run_after = now() + (? || ' seconds')::interval, updated_at = now() where id = ?`,
      [outcome === 'failed' ? 'failed' : 'queued', error, String(backoffSeconds), job.id],
    );
    return outcome;
  }

  /**
   * Returns to the queue work whose worker died: every running job when `all` (the embedded
   * database has one process, so at start nothing else can be running), else jobs whose lease lapsed.
   */
  async requeueAbandoned(all: boolean): Promise<number> {
    const rows = await this.sql<{ id: string }>(
      all
        ? `update jobs set status = 'queued', locked_by = null, updated_at = now() where status = 'running' returning id`
        : `update jobs set status = 'queued', locked_by = null, updated_at = now() where status = 'running' and locked_at < now() - (? || ' milliseconds')::interval returning id`,
      all ? [] : [String(JOB_LEASE_MS)],
    );
    return rows.length;
  }

  async pendingCount(): Promise<number> {
    const [row] = await this.sql<{ count: number | string }>(`select count(*) as count from jobs where status in ('queued', 'running')`);
    return Number(row?.count ?? 0);
  }
}
