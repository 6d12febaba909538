import { Migration } from '@mikro-orm/migrations';

/**
 * Since when a job has found its model provider unavailable (down, unreachable, rate-limiting),
 * attempt after attempt: such waits do not use up the job's attempts, and this bounds them
 * (PROVIDER_OUTAGE_WAIT_S, JobQueue.waitForProvider). The partial index finds a collection's waiting
 * jobs (its stats, a reprocess) without reading the whole queue, done jobs included.
 */
export class Migration0015ProviderOutageWaits extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table jobs add column provider_unavailable_since timestamptz');
    this.addSql("create index jobs_provider_waits_index on jobs (collection_id) where status = 'queued' and provider_unavailable_since is not null");
  }
}
