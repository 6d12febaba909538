import { Migration } from '@mikro-orm/migrations';

/**
 * A 384-dimension vector is 2,048 characters of base64, so its row passes PostgreSQL's 2 KB
 * toasting threshold and every insert first tries to compress it, which base64 of float32 barely
 * allows (the table ended 4 % smaller). With the threshold at its maximum, rows up to 8,160 bytes
 * stay inline and uncompressed; larger vectors are toasted as before. On PGlite, an insert of 375
 * rows into embedded_vectors went from 17.5-21.5 ms to 14.2 ms (p50 of 60 batches, issue 3 note).
 */
export class Migration0006InlineVectorRows extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table embedded_vectors set (toast_tuple_target = 8160)');
    this.addSql('alter table embedding_cache set (toast_tuple_target = 8160)');
  }
}
