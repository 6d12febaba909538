/**
 * Deletions lower each collection's chunk totals (migration 0027) in the statement that deletes
 * the rows, not through a trigger: a delete trigger's transition table holds every deleted row,
 * which doubled the time of deleting a large collection's rows on the embedded database.
 */

/** What a deleting CTE returns for `lowerChunkTotals`: `delete from chunks ... returning ${DELETED_CHUNK_FIGURES}`. */
export const DELETED_CHUNK_FIGURES = 'collection_id, document_id, octet_length(text) as text_bytes';

/** An UPDATE, for a CTE of its own or the statement's last part, lowering the totals by the rows the CTE `deleted` returned. */
export function lowerChunkTotals(deleted: string): string {
  return `update collection_chunk_totals as totals set chunks = totals.chunks - lowered.chunks,
       raw_vectors = totals.raw_vectors - lowered.raw_vectors, text_bytes = totals.text_bytes - lowered.text_bytes
     from (select collection_id, count(*) as chunks, count(*) filter (where document_id is null) as raw_vectors,
                  coalesce(sum(text_bytes), 0) as text_bytes
             from ${deleted} group by collection_id) as lowered
    where totals.collection_id = lowered.collection_id`;
}
