import { Migration } from '@mikro-orm/migrations';

/**
 * Each daily count of a query text also keys the text with its case folded (`folded_hash`, the md5
 * of its lower case), which analytics' lists and the day's cut group by (query-daily-texts.ts):
 * they grouped by `lower(query_text)`, a text hashed per row, which with a busy day's 179,000
 * texts took about a second of the embedded database's one connection. The index finds the forms
 * of the listed queries without reading the window's texts a second time.
 */
export class Migration0026QueryTextFoldedKeys extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table query_daily_texts add column folded_hash uuid');
    this.addSql('update query_daily_texts set folded_hash = md5(lower(query_text))::uuid');
    this.addSql('alter table query_daily_texts alter column folded_hash set not null');
    this.addSql('create index query_daily_texts_folded_index on query_daily_texts (collection_id, folded_hash)');
  }
}
