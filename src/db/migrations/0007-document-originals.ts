import { Migration } from '@mikro-orm/migrations';

/**
 * Originals of up to 64 KB live in the database (ORIGINALS_IN_DATABASE_MAX_BYTES), written by the
 * statement that creates their document, instead of as one file each. Creating a file cost these VMs
 * 0.03-0.8 ms of kernel time depending on where its directory lies on disk, the main thread waiting
 * (0.23 ms on average in a CPU profile of the service ingesting into a directory under /tmp);
 * riding along with an insert that runs anyway costs ~0.1 ms. A file written before its row could also outlive a crash between
 * the two; a row cannot.
 */
export class Migration0007DocumentOriginals extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table document_originals (
        document_id uuid primary key references documents (id) on delete cascade,
        content bytea not null
      )`);
  }
}
