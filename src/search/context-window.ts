/**
 * A result's neighbouring chunks (`context_window`): small chunks rank well, and the text around
 * them is what an answer needs ("sentence window" or "parent" retrieval), without a second request
 * per result. The window is the chunks up to n before and after the result's, in its document, as
 * one text: each chunk knows where it starts in its document's text (migration 0016), so their
 * overlap is written once.
 */
import { elementSeparator } from '../chunking/chunk-elements.js';
import type { SqlRunner } from '../plugins.js';

/** Chunks on each side: 5 gives 11 chunks a result, about 8 KB of text at the default chunk size (800, 100 of overlap). */
export const MAX_CONTEXT_WINDOW = 5;

export interface ResultContext {
  text: string;
  first_chunk_index: number;
  last_chunk_index: number;
}

export interface WindowChunk {
  chunk_index: number;
  text: string;
  /** Null for chunks written before migration 0016. */
  text_start: number | null;
}

/**
 * Joins consecutive chunks of one document (in index order) into the text they cover. Where both
 * offsets are known, what a chunk repeats of the text before it is left out, and a gap between
 * two chunks is the blank line chunking puts between elements; without offsets, chunks are joined
 * by that blank line (their overlap then shows twice).
 */
export function joinWindow(chunks: readonly WindowChunk[]): string {
  let text = '';
  let end: number | null = null;
  for (const [index, chunk] of chunks.entries()) {
    const chunkEnd = chunk.text_start === null ? null : chunk.text_start + chunk.text.length;
    if (index === 0) {
      text = chunk.text;
    } else if (end !== null && chunk.text_start !== null && chunkEnd !== null && chunk.text_start <= end) {
      if (chunkEnd > end) text += chunk.text.slice(end - chunk.text_start);
    } else {
      text += elementSeparator + chunk.text;
    }
    end = end !== null && chunkEnd !== null ? Math.max(end, chunkEnd) : chunkEnd;
  }
  return text;
}

interface ResultInWindow {
  document_id: string | null;
  chunk_index: number;
  context?: ResultContext | null;
}

/** Sets `context` on each result: its window, or null for a raw vector (no document) or a chunk deleted meanwhile. */
export async function attachContextWindows(sql: SqlRunner, results: ResultInWindow[], window: number): Promise<void> {
  const ofDocuments = results.filter((result) => result.document_id !== null);
  const rows = ofDocuments.length === 0 ? [] : await sql<WindowChunk & { document_id: string }>(
    // Not `distinct` (results near each other ask for the same chunks): it sorted on the texts too.
    `select chunk.document_id, chunk.chunk_index, chunk.text, chunk.text_start
       from unnest(?::uuid[], ?::int[], ?::int[]) as wanted (document_id, first_index, last_index)
       join chunks chunk on chunk.document_id = wanted.document_id and chunk.chunk_index between wanted.first_index and wanted.last_index
      order by chunk.document_id, chunk.chunk_index`,
    [
      ofDocuments.map((result) => result.document_id),
      ofDocuments.map((result) => result.chunk_index - window),
      ofDocuments.map((result) => result.chunk_index + window),
    ],
  );
  const byDocument = new Map<string, WindowChunk[]>();
  for (const row of rows) {
    const chunks = byDocument.get(row.document_id) ?? [];
    if (chunks[chunks.length - 1]?.chunk_index !== row.chunk_index) chunks.push(row);
    byDocument.set(row.document_id, chunks);
  }
  for (const result of results) {
    const inWindow = (byDocument.get(result.document_id ?? '') ?? [])
      .filter((chunk) => Math.abs(chunk.chunk_index - result.chunk_index) <= window);
    const own = inWindow.some((chunk) => chunk.chunk_index === result.chunk_index);
    result.context = own
      ? { text: joinWindow(inWindow), first_chunk_index: inWindow[0]!.chunk_index, last_chunk_index: inWindow[inWindow.length - 1]!.chunk_index }
      : null;
  }
}
