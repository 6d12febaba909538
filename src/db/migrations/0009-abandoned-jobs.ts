import { Migration } from '@mikro-orm/migrations';

/**
 * How often a job was left running by a process that stopped (crashed, killed, out of memory). A
 * job left so is claimed alone afterwards, so a document that takes the process down takes only
 * itself down, and fails after its last attempt instead of stopping every start (JobQueue). The
 * partial index finds such jobs without reading the whole queue at every claim.
 */
export class Migration0009AbandonedJobs extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table jobs add column abandoned integer not null default 0');
    this.addSql("create index jobs_abandoned_claim_index on jobs (run_after) where status = 'queued' and abandoned > 0");
  }
}
