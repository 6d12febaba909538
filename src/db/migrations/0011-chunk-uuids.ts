import { Migration } from '@mikro-orm/migrations';

/**
 * Document chunks had the id "<document id>:<index>"; api-contract 1 says ids the service makes
 * are UUIDs, and clients keep them in uuid columns. New chunks get the name-based UUID (version 3,
 * RFC 9562 5.3) of their index under their document's id (documentChunkId, src/documents/
 * chunk-store.ts); this gives stored chunks the same id, so that reprocessing them writes over
 * them in place as before. MD5 of namespace bytes and name, then the version nibble (3) and the
 * variant bits (10). The search indexes refer to chunks by `key`, which stays.
 */
export class Migration0011ChunkUuids extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      update chunks set id = (
        substr(old.digest, 1, 12) || '3' || substr(old.digest, 14, 3)
        || to_hex((('x' || substr(old.digest, 17, 1))::bit(4)::int & 3) | 8) || substr(old.digest, 18)
      )::uuid::text
      from (
        select key, md5(decode(replace(document_id::text, '-', ''), 'hex') || convert_to(chunk_index::text, 'UTF8')) as digest
        from chunks
        where document_id is not null and id = document_id::text || ':' || chunk_index::text
      ) as old
      where chunks.key = old.key`);
  }
}
