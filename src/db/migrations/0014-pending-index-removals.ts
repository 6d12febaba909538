import { Migration } from '@mikro-orm/migrations';

/**
 * Index removals still owed: a deletion removes rows first and index entries after (see
 * removeDocuments), and when the second step failed (a lost connection, a vector store refusing)
 * the entries stayed for good, since a retried DELETE finds no rows and answers 404. The record is
 * written by the statement that deletes the rows, deleted once the entries are gone, and retried
 * by PendingIndexRemovalSweep otherwise.
 *
 * `chunk_keys` null stands for every entry of the collection (the collection itself was deleted).
 * `attempts` counts the sweeps that took the record; `next_attempt_at` keeps it from the other
 * replicas' sweeps while one works on it, and spaces out the retries of a removal that keeps failing.
 * No foreign key to collections: the record outlives the collection it is about. No index beyond
 * the key: the table holds only removals that failed or are in flight, a handful of rows.
 */
export class Migration0014PendingIndexRemovals extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table pending_index_removals (
      id bigserial primary key,
      collection_id uuid not null,
      chunk_keys bigint[] null,
      created_at timestamptz not null default now(),
      next_attempt_at timestamptz not null default now(),
      attempts integer not null default 0,
      last_error text null
    )`);
  }
}
