/**
 * The embedded store's durable copy: `embedded_vectors` rows of base64 float32 (little-endian, the
 * byte order of every platform Node ships for; loads ~9x faster than bytea in PGlite), plus the
 * chunks' metadata and tenant, read back when an index is rebuilt after a restart.
 */
import { UnprocessableError } from '../../../src/errors.js';
import type { SqlRunner } from '../../../src/plugins.js';

export interface KeyedEmbedding {
  key: number;
  embedding: Float32Array;
}

export interface ChunkAttributes {
  metadata: Record<string, unknown>;
  tenant: string | null;
}

export interface EncodedVectorPage {
  keys: number[];
  /** base64 of `dimension` little-endian float32 values each. */
  embeddings: string[];
}

export function encodeEmbedding(embedding: Float32Array): string {
  return Buffer.from(embedding.buffer, embedding.byteOffset, embedding.byteLength).toString('base64');
}

/** Decodes straight into `target` (no intermediate buffer); false when the byte count differs. */
export function decodeEmbeddingInto(base64: string, target: Float32Array): boolean {
  if (Buffer.byteLength(base64, 'base64') !== target.byteLength) return false;
  Buffer.from(target.buffer, target.byteOffset, target.byteLength).write(base64, 'base64');
  return true;
}

export class EmbeddedVectorTable {
  constructor(private readonly sql: SqlRunner) {}

  /**
   * One statement: the caller sizes the batch. The embeddings go as one bound text of
   * comma-separated base64 (base64 has no comma), split in SQL: on PGlite a bound value is sent
   * about twice as fast as the same bytes inlined into the statement, and one value instead of one
   * per row keeps knex's placeholder handling out of it.
   */
  async upsert(collectionId: string, rows: KeyedEmbedding[]): Promise<void> {
    if (rows.length === 0) return;
    const keys = rows.map((row) => row.key);
    if (!keys.every(Number.isSafeInteger)) throw new UnprocessableError('vector keys must be integers');
    await this.sql(
      `insert into embedded_vectors (chunk_key, collection_id, embedding)
       select chunk_key, ?::uuid, embedding
       from unnest(?::bigint[], string_to_array(?::text, ',')) as row(chunk_key, embedding)
       on conflict (chunk_key) do update set collection_id = excluded.collection_id, embedding = excluded.embedding`,
      [collectionId, keys, rows.map((row) => encodeEmbedding(row.embedding)).join(',')],
    );
  }

  async delete(collectionId: string, keys: number[]): Promise<void> {
    if (keys.length === 0) return;
    await this.sql('delete from embedded_vectors where collection_id = ? and chunk_key = any(?::bigint[])', [collectionId, keys]);
  }

  /**
   * Every row of the collection. When they are the whole table (a single collection, as on a
   * laptop), the table is truncated instead: deleting 191k rows (a 50,000-document truncate) left
   * their space for the embedded database's VACUUM, whose round then held PGlite's one connection
   * for 7.5 s, this table the slowest in every round. The lock comes first, so no other
   * collection's row can arrive between the look and the truncate.
   */
  async deleteCollection(collectionId: string): Promise<void> {
    await this.sql.transaction(async (run) => {
      await run('lock table embedded_vectors in access exclusive mode');
      // Two index range scans: `<>` would read the table until it met another collection's row.
      const others = await run(
        `(select 1 from embedded_vectors where collection_id < ?::uuid limit 1)
         union all (select 1 from embedded_vectors where collection_id > ?::uuid limit 1)`, [collectionId, collectionId],
      );
      if (others.length === 0) await run('truncate embedded_vectors');
      else await run('delete from embedded_vectors where collection_id = ?', [collectionId]);
    });
  }

  async count(collectionId: string): Promise<number> {
    const rows = await this.sql<{ count: number | string }>('select count(*) as count from embedded_vectors where collection_id = ?', [collectionId]);
    return Number(rows[0].count);
  }

  /** Pages in key order (keyset pagination: each page is one short statement on PGlite's single connection). */
  async *pages(collectionId: string, pageRows: number): AsyncIterableIterator<EncodedVectorPage> {
    let afterKey = -1;
    for (;;) {
      const rows = await this.sql<{ chunk_key: number | string; embedding: string }>(
        'select chunk_key, embedding from embedded_vectors where collection_id = ? and chunk_key > ? order by chunk_key limit ?',
        [collectionId, afterKey, pageRows],
      );
      if (rows.length === 0) return;
      const keys = rows.map((row) => Number(row.chunk_key));
      yield { keys, embeddings: rows.map((row) => row.embedding) };
      if (rows.length < pageRows) return;
      afterKey = keys[keys.length - 1];
    }
  }

  /** Metadata and tenant of every chunk of the collection, paged by key like `pages`. */
  async chunkAttributes(collectionId: string, pageRows: number): Promise<Map<number, ChunkAttributes>> {
    const attributes = new Map<number, ChunkAttributes>();
    let afterKey = -1;
    for (;;) {
      const rows = await this.sql<{ key: number | string; metadata: Record<string, unknown> | string | null; tenant: string | null }>(
        'select key, metadata, tenant from chunks where collection_id = ? and key > ? order by key limit ?',
        [collectionId, afterKey, pageRows],
      );
      for (const row of rows) {
        const metadata = typeof row.metadata === 'string' ? (JSON.parse(row.metadata) as Record<string, unknown>) : (row.metadata ?? {});
        attributes.set(Number(row.key), { metadata, tenant: row.tenant });
      }
      if (rows.length < pageRows) return attributes;
      afterKey = Number(rows[rows.length - 1].key);
    }
  }
}
