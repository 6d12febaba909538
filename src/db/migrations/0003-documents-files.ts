import { Migration } from '@mikro-orm/migrations';

/**
 * Batches, upload sessions, stored files and multimodal elements (issue 4). Kept to what
 * PostgreSQL 15 accepts.
 */
export class Migration0003DocumentsFiles extends Migration {
  override async up(): Promise<void> {
    // One row per batch upload or completed upload session. `files` is the per-file manifest in
    // request order ({filename, document_id, outcome, error}), so refused files and skipped
    // duplicates stay visible after the request; documents point back through documents.batch_id.
    this.addSql(`
      create table document_batches (
        id uuid primary key,
        collection_id uuid not null references collections (id) on delete cascade,
        source varchar(16) not null,
        files jsonb not null default '[]'::jsonb,
        created_at timestamptz not null
      )`);
    this.addSql('create index document_batches_collection_index on document_batches (collection_id, created_at)');
    this.addSql('create index documents_batch_index on documents (batch_id) where batch_id is not null');

    this.addSql(`
      create table upload_sessions (
        id uuid primary key,
        collection_id uuid not null references collections (id) on delete cascade,
        status varchar(16) not null,
        metadata jsonb not null default '{}'::jsonb,
        on_duplicate varchar(16) not null,
        batch_id uuid null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        completed_at timestamptz null
      )`);
    this.addSql('create index upload_sessions_collection_index on upload_sessions (collection_id, created_at)');

    this.addSql(`
      create table upload_session_files (
        id uuid primary key,
        session_id uuid not null references upload_sessions (id) on delete cascade,
        filename varchar(1024) not null,
        content_type varchar(255) not null,
        size_bytes bigint not null,
        sha256 varchar(64) not null,
        storage_key text not null,
        document_id uuid null,
        created_at timestamptz not null
      )`);
    this.addSql('create index upload_session_files_session_index on upload_session_files (session_id, created_at)');

    // An image element's picture is a stored file; its caption (or why there is none) sits beside it.
    this.addSql('alter table document_elements add column storage_key text null');
    this.addSql('alter table document_elements add column content_type varchar(255) null');
    this.addSql('alter table document_elements add column size_bytes bigint null');
    this.addSql('alter table document_elements add column caption text null');
    this.addSql('alter table document_elements add column caption_status varchar(16) null');
    this.addSql('alter table document_elements add column caption_error text null');
    this.addSql(`create index document_elements_image_index on document_elements (document_id) where type = 'image'`);
  }
}
