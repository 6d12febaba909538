import { Migration } from '@mikro-orm/migrations';

/**
 * What a file says about itself (front matter, a PDF's or a Word file's properties, HTML meta
 * tags), as its parser read it: shown on the document and copied onto its chunks at ingestion.
 * Documents ingested before stay empty until they are reprocessed.
 */
export class Migration0012DocumentSourceMetadata extends Migration {
  override async up(): Promise<void> {
    this.addSql("alter table documents add column source_metadata jsonb not null default '{}'::jsonb");
  }
}
