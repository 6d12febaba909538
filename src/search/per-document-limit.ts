/**
 * `max_per_document`: at most n results from one document, so that a long document whose chunks
 * all match does not fill `top_k` and hide every other source (a RAG answer citing one manual ten
 * times). The search indexes know chunks, not documents: the ranked keys are looked up, and the
 * query asks the indexes for deeper lists while the limit leaves fewer than it needs.
 */
import type { SqlRunner } from '../plugins.js';

export const MAX_PER_DOCUMENT_LIMIT = 100;

/** How deep the lists may go to fill the results: twice the deepest a hybrid query at the largest top_k (1,000) asks for. */
export const MAX_LIMITED_DEPTH = 4000;

/**
 * Adds to `known` the document of each key it lacks (null for a raw vector; a key whose chunk is
 * gone stays absent): a deeper search's list starts with the keys an earlier one looked up.
 */
export async function learnDocumentsOfChunks(sql: SqlRunner, keys: readonly number[], known: Map<number, string | null>): Promise<void> {
  const unknown = keys.filter((key) => !known.has(key));
  if (unknown.length === 0) return;
  const rows = await sql<{ key: number | string; document_id: string | null }>('select key, document_id from chunks where key = any(?::bigint[])', [unknown]);
  for (const row of rows) known.set(Number(row.key), row.document_id);
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
