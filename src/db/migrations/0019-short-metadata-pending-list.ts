import { Migration } from '@mikro-orm/migrations';

/**
 * A short list of pending entries for the GIN index over chunk metadata (migration 0018): 64 kB,
 * the least PostgreSQL allows, where the default is 4 MB.
 *
 * Every scan of a GIN index reads its whole pending list, once per value it looks up, and the list
 * is only merged into the index when it outgrows its limit or a vacuum runs. After loading 115k
 * chunks it held 14,564 entries (143 pages), below both a vacuum's threshold and the 4 MB limit: a
 * filtered keyword query's lookup of `{"batch": {"$in": [7, 8, 9]}}` (six containment values) took
 * 8.4-9.6 ms, and 1.7-2.1 ms once the list was merged; `{"batch": 7}` 1.9-2.1 ms against 0.5-0.6.
 * With at most 8 pages pending, a lookup reads little more than the index itself. Inserting costs
 * about the same: 20,000 rows of six keys took 139-151 ms with the 4 MB list, 172-181 ms with
 * 64 kB and 452-473 ms written straight (`fastupdate = off`), 118-130 ms without the index; in
 * statements of 100 rows, 220-228 ms with 4 MB against 181-186 ms with 64 kB.
 */
export class Migration0019ShortMetadataPendingList extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter index chunks_metadata_index set (gin_pending_list_limit = 64)');
    // What is pending now would otherwise stay until the next insert outgrows the new limit.
    this.addSql("select gin_clean_pending_list('chunks_metadata_index'::regclass)");
  }
}
