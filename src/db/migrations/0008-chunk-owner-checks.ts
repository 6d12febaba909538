import { Migration } from '@mikro-orm/migrations';

/**
 * Chunks and elements are written tens of thousands at a time, and a foreign key checks every row
 * with a query of its own: three such checks (chunk → collection, chunk → document, element →
 * document) took a fifth to two fifths of the time of the two largest ingestion statements on
 * PGlite (issue 3 note). The writes now check their owners once per statement instead, locking each
 * owner row as a foreign key would (`insertChunks`, `replaceElements`), and these triggers delete
 * what the cascades deleted: one statement per deleting statement, by index (`= any(array(...))`
 * keeps the planner, which has no statistics on PGlite, off a scan of every chunk).
 */
export class Migration0008ChunkOwnerChecks extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table chunks drop constraint chunks_collection_id_fkey');
    this.addSql('alter table chunks drop constraint chunks_document_id_fkey');
    this.addSql('alter table document_elements drop constraint document_elements_document_id_fkey');
    this.addSql(`
      create function remove_parts_of_deleted_documents() returns trigger language plpgsql as $$
      begin
        delete from chunks where document_id = any(array(select id from deleted_documents));
        delete from document_elements where document_id = any(array(select id from deleted_documents));
        return null;
      end $$`);
    this.addSql(`
      create trigger documents_remove_parts after delete on documents
      referencing old table as deleted_documents for each statement execute function remove_parts_of_deleted_documents()`);
    this.addSql(`
      create function remove_chunks_of_deleted_collections() returns trigger language plpgsql as $$
      begin
        delete from chunks where collection_id = any(array(select id from deleted_collections));
        return null;
      end $$`);
    this.addSql(`
      create trigger collections_remove_chunks after delete on collections
      referencing old table as deleted_collections for each statement execute function remove_chunks_of_deleted_collections()`);
  }
}
