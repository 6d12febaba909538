import { Migration } from '@mikro-orm/migrations';

/**
 * Where a chunk starts in its document's text (UTF-16 code units into the parsed elements joined
 * as chunking joins them), so a query can return a result's neighbouring chunks as one text
 * without repeating their overlap (`context_window`). Null for raw vectors and for chunks written
 * before this column, whose windows are joined with a blank line until the document is reprocessed.
 */
export class Migration0016ChunkTextStart extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table chunks add column text_start integer null');
  }
}
