import { sha256Hex } from '../crypto/tokens.js';
import type { SqlRunner } from '../plugins.js';

/** Rows per statement: one statement costs ~1 ms on PGlite whatever its size, so writes go in bulk. */
const ROWS_PER_STATEMENT = 1000;

/** Everything that decides which vector a text gets. */
export interface EmbeddingIdentity {
  provider: string;
  model: string;
  dimension: number;
  /** Two servers may serve different weights under one model name. */
  baseUrl: string;
  /** Cohere and Voyage embed documents and queries differently. */
  purpose: 'document' | 'query';
}

export function modelKey(identity: EmbeddingIdentity): string {
  return sha256Hex(JSON.stringify([identity.provider, identity.model, identity.dimension, identity.baseUrl, identity.purpose]));
}


function encodeVector(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
}

function decodeVector(encoded: string): Float32Array {
  const bytes = Buffer.from(encoded, 'base64');
  // Copied into a fresh buffer: a decoded Buffer may start at an offset that is not 4-aligned.
  const floats = new Float32Array(bytes.length / 4);
  new Uint8Array(floats.buffer).set(bytes);
  return floats;
}

/**
 * Vectors of texts already embedded, in the database (shared by replicas, kept across restarts),
 * keyed by model and text hash. Vectors are kept as float32, the precision every vector store
 * here indexes at, so a cached vector ranks exactly as a fresh one.
 */
export class EmbeddingCache {
  constructor(private readonly sql: SqlRunner) {}

  async lookup(key: string, hashes: readonly string[]): Promise<Map<string, Float32Array>> {
    const found = new Map<string, Float32Array>();
    for (let start = 0; start < hashes.length; start += ROWS_PER_STATEMENT) {
      const rows = await this.sql<{ text_hash: string; embedding: string }>(
        'select text_hash, embedding from embedding_cache where model_key = ? and text_hash = any(?::text[])',
        [key, hashes.slice(start, start + ROWS_PER_STATEMENT)],
      );
      for (const row of rows) found.set(row.text_hash, decodeVector(row.embedding));
    }
    return found;
  }

  async store(key: string, entries: ReadonlyArray<{ hash: string; vector: Float32Array }>): Promise<void> {
    for (let start = 0; start < entries.length; start += ROWS_PER_STATEMENT) {
      const rows = entries.slice(start, start + ROWS_PER_STATEMENT).map((entry) => ({ h: entry.hash, e: encodeVector(entry.vector) }));
      await this.sql(
        `insert into embedding_cache (model_key, text_hash, embedding, created_at)
         select ?, r.h, r.e, now() from jsonb_to_recordset(?::jsonb) as r(h text, e text)
         on conflict (model_key, text_hash) do nothing`,
        [key, JSON.stringify(rows)],
      );
    }
  }

  /** Bytes of the cached vectors as stored, base64 text before compression. */
  async bytes(): Promise<number> {
    const [row] = await this.sql<{ bytes: string | number | null }>('select sum(octet_length(embedding)) as bytes from embedding_cache');
    return Number(row?.bytes ?? 0);
  }

  /**
   * Deletes the oldest vectors, as few as bring the cache to `maxBytes` or under; returns how many.
   * Read a thousand at a time, oldest first (vectors stored by one statement share a time and go
   * by text hash), so a small excess deletes a few vectors, not a statement's worth.
   */
  async evictOldest(maxBytes: number): Promise<number> {
    let excess = await this.bytes() - maxBytes;
    let evicted = 0;
    while (excess > 0) {
      const oldest = await this.sql<{ model_key: string; text_hash: string; bytes: string | number }>(
        `select model_key, text_hash, octet_length(embedding) as bytes from embedding_cache
         order by created_at, model_key, text_hash limit ${ROWS_PER_STATEMENT}`,
      );
      if (oldest.length === 0) break;
      const doomed: typeof oldest = [];
      for (const row of oldest) {
        if (excess <= 0) break;
        doomed.push(row);
        excess -= Number(row.bytes);
      }
      await this.sql(
        `delete from embedding_cache c using jsonb_to_recordset(?::jsonb) as r(k text, h text)
         where c.model_key = r.k and c.text_hash = r.h`,
        [JSON.stringify(doomed.map((row) => ({ k: row.model_key, h: row.text_hash })))],
      );
      evicted += doomed.length;
    }
    return evicted;
  }

  /** Empties the cache; returns how many vectors it held. */
  async purge(): Promise<number> {
    const [row] = await this.sql<{ purged: string | number }>('with gone as (delete from embedding_cache returning 1) select count(*) as purged from gone');
    return Number(row?.purged ?? 0);
  }

  async size(): Promise<number> {
    const [row] = await this.sql<{ entries: string | number }>('select count(*) as entries from embedding_cache');
    return Number(row?.entries ?? 0);
  }
}
