/**
 * `max_per_document`: at most n results from one document, so that a long document whose chunks
 * all match does not fill `top_k` and hide every other source (a RAG answer citing one manual ten
 * times). The search indexes know chunks, not documents: the ranked keys are looked up, and the
 * query asks the indexes for deeper lists while the limit leaves fewer than it needs.
 */
import type { SqlRunner } from '../plugins.js';

export const MAX_PER_DOCUMENT_LIMIT = 100;

/** How deep the lists may go to fill the results: the deepest list a query may ask for anyway. */
export const MAX_LIMITED_DEPTH = 4000;

/** The document of each chunk key; null for a raw vector. A key whose chunk is gone is absent. */
export async function documentsOfChunks(sql: SqlRunner, keys: readonly number[]): Promise<Map<number, string | null>> {
  if (keys.length === 0) return new Map();
  const rows = await sql<{ key: number | string; document_id: string | null }>('select key, document_id from chunks where key = any(?::bigint[])', [[...keys]]);
  return new Map(rows.map((row) => [Number(row.key), row.document_id]));
}

/**
 * The ranked hits in order, but for those of a document that already has `max` before them. A raw
 * vector is a source of its own, and a hit whose chunk is gone is kept (the fetch leaves it out).
 */
export function limitPerDocument<T extends { key: number }>(ranked: readonly T[], documentOf: ReadonlyMap<number, string | null>, max: number): T[] {
  const counts = new Map<string, number>();
  return ranked.filter((hit) => {
    const document = documentOf.get(hit.key);
    if (document === undefined || document === null) return true;
    const count = counts.get(document) ?? 0;
    counts.set(document, count + 1);
    return count < max;
  });
}
