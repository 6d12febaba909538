import { Migration } from '@mikro-orm/migrations';

/**
 * A GIN index over document metadata, for the document list's `filters`
 * (`GET /v1/collections/{name}/documents?filters=...`). Their equality and membership conditions go
 * to SQL as containment beside the exact expression (filter-to-sql.ts), as queries' do over chunk
 * metadata (migration 0018), so a page of documents passing a selective filter, and their total, are
 * read from the index instead of testing every document of the collection. jsonb_path_ops: only
 * `@>` is asked of it. Pending entries are kept to 64 kB, as for chunks (migration 0019): every scan
 * reads them all. Measured in bench/documents/document-list.ts (bench/README.md, "Document list").
 */
export class Migration0020DocumentMetadataIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql('create index documents_metadata_index on documents using gin (metadata jsonb_path_ops) with (gin_pending_list_limit = 64)');
  }
}
