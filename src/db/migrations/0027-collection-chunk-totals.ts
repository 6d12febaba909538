import { Migration } from '@mikro-orm/migrations';

/**
 * Each collection's chunk count, raw-vector count and chunk text bytes, for collection stats,
 * `GET /v1/stats` and `/v1/usage`: each request counted and summed every chunk row (500,000 chunks
 * of 2 kB on the embedded database: 773 ms for `/v1/stats`, 630 for a collection's stats, 2.7 s for
 * `/v1/usage`, each holding its one connection; bench/collections/storage-figures.ts).
 *
 * Inserts and updates are counted by statement triggers with transition tables, one upsert per
 * writing statement, whichever path writes. Deletions are counted by the deleting statements
 * themselves (chunk-store.ts, chunk-totals.ts) and, for chunks of documents deleted otherwise, by
 * the document trigger of migration 0008, which deletes them: a delete trigger's transition table
 * holds every deleted row, and deleting a collection's 500,000 rows took 10.2 s with one against
 * 5.3 s without on the embedded database. A row a collection: writes hold it to their statement's
 * end only, as chunk statements run on their own or last in their transaction.
 * No foreign key to collections: its check would lock the collection row from a document
 * deletion, which a collection deletion waiting on that document's chunks would then deadlock
 * with. The collection trigger of migration 0008 deletes the row after the chunks instead, and
 * readers join collections.
 * The totals start from the chunks there are; the triggers exist first, in the same transaction,
 * so a write cannot fall between the count and them.
 */
export class Migration0027CollectionChunkTotals extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table collection_chunk_totals (
        collection_id uuid primary key,
        chunks bigint not null,
        raw_vectors bigint not null,
        text_bytes bigint not null
      )`);
    this.addSql(`
      create function count_chunk_changes() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          insert into collection_chunk_totals as totals (collection_id, chunks, raw_vectors, text_bytes)
          select collection_id, count(*), count(*) filter (where document_id is null), sum(octet_length(text))
            from new_chunks group by collection_id
          on conflict (collection_id) do update set chunks = totals.chunks + excluded.chunks,
            raw_vectors = totals.raw_vectors + excluded.raw_vectors, text_bytes = totals.text_bytes + excluded.text_bytes;
        else
          insert into collection_chunk_totals as totals (collection_id, chunks, raw_vectors, text_bytes)
          select collection_id, sum(sign), coalesce(sum(sign) filter (where document_id is null), 0), sum(sign * octet_length(text))
            from (select collection_id, 1 as sign, document_id, text from new_chunks
                  union all select collection_id, -1, document_id, text from old_chunks) as changed
           group by collection_id
          on conflict (collection_id) do update set chunks = totals.chunks + excluded.chunks,
            raw_vectors = totals.raw_vectors + excluded.raw_vectors, text_bytes = totals.text_bytes + excluded.text_bytes;
        end if;
        return null;
      end $$`);
    this.addSql(`
      create trigger chunks_count_inserted after insert on chunks
      referencing new table as new_chunks for each statement execute function count_chunk_changes()`);
    this.addSql(`
      create trigger chunks_count_updated after update on chunks
      referencing old table as old_chunks new table as new_chunks for each statement execute function count_chunk_changes()`);
    this.addSql(`
      create or replace function remove_parts_of_deleted_documents() returns trigger language plpgsql as $$
      begin
        with gone as (
          delete from chunks where document_id = any(array(select id from deleted_documents))
          returning collection_id, octet_length(text) as bytes
        )
        update collection_chunk_totals as totals set chunks = totals.chunks - lowered.chunks, text_bytes = totals.text_bytes - lowered.bytes
          from (select collection_id, count(*) as chunks, sum(bytes) as bytes from gone group by collection_id) as lowered
         where totals.collection_id = lowered.collection_id;
        delete from document_elements where document_id = any(array(select id from deleted_documents));
        return null;
      end $$`);
    this.addSql(`
      create or replace function remove_chunks_of_deleted_collections() returns trigger language plpgsql as $$
      begin
        delete from chunks where collection_id = any(array(select id from deleted_collections));
        delete from collection_chunk_totals where collection_id = any(array(select id from deleted_collections));
        return null;
      end $$`);
    this.addSql(`
      insert into collection_chunk_totals (collection_id, chunks, raw_vectors, text_bytes)
      select collection_id, count(*), count(*) filter (where document_id is null), coalesce(sum(octet_length(text)), 0)
        from chunks where collection_id in (select id from collections) group by collection_id`);
  }
}
