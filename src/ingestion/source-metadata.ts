/**
 * The part of a document's source metadata (what its parser read from the file: front matter,
 * document properties) that goes onto each of its chunks, so queries can filter on it and results
 * carry it. Only values a filter can compare are copied: strings, numbers, booleans and lists of
 * them. Nested maps, and strings so long that every chunk would repeat a page of text, stay on the
 * document (`source_metadata`).
 */
const LONGEST_COPIED_TEXT = 1000;
const LONGEST_COPIED_LIST = 100;
/** The chunk's own keys: a front matter `page` must not pass for the page a PDF chunk is on. */
const CHUNK_KEYS = new Set(['heading_path', 'page', 'table_header', 'element_types', 'code_languages']);

function isCopiedScalar(value: unknown): boolean {
  if (typeof value === 'string') return value.length <= LONGEST_COPIED_TEXT;
  return typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

function isCopied(value: unknown): boolean {
  if (Array.isArray(value)) return value.length <= LONGEST_COPIED_LIST && value.every(isCopiedScalar);
  return isCopiedScalar(value);
}

export function sourceMetadataForChunks(source: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(source).filter(([key, value]) => !CHUNK_KEYS.has(key) && isCopied(value)));
}
