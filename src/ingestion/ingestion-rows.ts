/**
 * The rows ingestion writes for a batch of prepared (parsed and chunked) documents: element rows
 * and chunk rows, built a statement's or a slice's worth at a time rather than all at once.
 */
import { isBlankElement, type ElementChunk } from '../chunking/chunk-elements.js';
import { documentChunkId } from '../documents/chunk-store.js';
import type { ElementFile } from '../documents/element-files.js';
import type { CodeLanguageNames } from '../parsing/code-language-names.js';
import { sameHeadingPath } from '../parsing/heading-trail.js';
import type { DocumentElement } from '../plugins.js';
import { sourceMetadataForChunks } from './source-metadata.js';

export interface DocumentRow {
  id: string;
  collection_id: string;
  filename: string;
  content_type: string;
  storage_key: string | null;
  /** A small original kept in the database (document_originals), in base64. */
  original: string | null;
  metadata: Record<string, unknown>;
  tenant: string | null;
}

export interface PreparedDocument {
  row: DocumentRow;
  title: string | undefined;
  /** The parser's `metadata`, through JSON: it is stored, and a plugin may return anything. */
  sourceMetadata: Record<string, unknown>;
  elements: DocumentElement[];
  elementFiles: Array<ElementFile | null>;
  chunks: ElementChunk[];
  /** Loaded when the document has code blocks with a language tag (chunk metadata `code_languages`). */
  codeLanguageNames?: CodeLanguageNames;
}

/**
 * The rows of elements `start` to `end` (counted over the documents in order), built per statement
 * rather than for every element of the batch at once (350k rows for a 200 MB text).
 */
export function elementRows(documents: PreparedDocument[], start: number, end: number) {
  return slicesOf(documents, (document) => document.elements, start, end).flatMap(({ document, from, to }) =>
    document.elements.slice(from, to).map((element, offset) => ({
      document_id: document.row.id, element_index: from + offset, type: element.type, text: element.text, heading_path: element.headingPath,
      page: element.page ?? null, metadata: { ...(element.metadata ?? {}), ...(element.level ? { level: element.level } : {}) },
      ...document.elementFiles[from + offset],
    })));
}

/** For items `start` to `end` counted over the documents' lists in order: each document's share, as [from, to) of its own list. */
function slicesOf(documents: PreparedDocument[], list: (document: PreparedDocument) => readonly unknown[], start: number, end: number) {
  const slices: Array<{ document: PreparedDocument; from: number; to: number }> = [];
  let first = 0;
  for (const document of documents) {
    const length = list(document).length;
    const from = Math.max(start - first, 0);
    const to = Math.min(end - first, length);
    first += length;
    if (from < to) slices.push({ document, from, to });
  }
  return slices;
}

export interface ChunkRow {
  id: string;
  documentId: string;
  chunkIndex: number;
  text: string;
  metadata: Record<string, unknown>;
  tenant: string | null;
  /** Where the chunk starts in its document's text (ElementChunk.charStart). */
  textStart: number;
  /** The header row of the table the chunk continues (ElementChunk.tableHeader). */
  tableHeader?: string;
}

/**
 * What a chunk is embedded as: its text, after the header row of the table it continues, so
 * that rows cut off from their header are still found by what their columns mean.
 */
export function embeddingInput(row: ChunkRow): string {
  return row.tableHeader === undefined ? row.text : `${row.tableHeader}\n${row.text}`;
}

/**
 * The rows of chunks `start` to `end` (counted over the documents in order). Built a slice at a
 * time: rows for all 344k chunks of a 200 MB text, each with its id and metadata object, were all
 * held until the last slice was written.
 */
export function chunkRows(documents: PreparedDocument[], start: number, end: number): ChunkRow[] {
  return slicesOf(documents, (document) => document.chunks, start, end).flatMap(({ document, from, to }) => {
    const fromSource = sourceMetadataForChunks(document.sourceMetadata);
    let previous: { chunk: ElementChunk; contents: ChunkContents; metadata: Record<string, unknown> } | undefined;
    return document.chunks.slice(from, to).map((chunk) => {
      const contents = chunkContents(document, chunk);
      // Consecutive chunks of one section share one metadata object (nothing changes one in place):
      // the embedded vector store and keyword index keep it as long as the chunk lives, and each of
      // a plain text's 344k chunks had its own equal copy.
      const metadata = previous && previous.chunk.page === chunk.page && sameHeadingPath(previous.chunk.headingPath, chunk.headingPath)
        && previous.chunk.tableHeader === chunk.tableHeader && sameContents(previous.contents, contents)
        ? previous.metadata
        // Upload metadata on every chunk, so callers always find and can filter on what they sent: it
        // wins over the chunk's own keys, and over what the file says of itself.
        : {
          ...fromSource, heading_path: chunk.headingPath, ...(chunk.page !== undefined ? { page: chunk.page } : {}),
          ...(chunk.tableHeader !== undefined ? { table_header: chunk.tableHeader } : {}),
          element_types: contents.elementTypes, ...(contents.codeLanguages.length > 0 ? { code_languages: contents.codeLanguages } : {}),
          ...document.row.metadata,
        };
      previous = { chunk, contents, metadata };
      return {
        id: documentChunkId(document.row.id, chunk.index), documentId: document.row.id, chunkIndex: chunk.index, text: chunk.text, metadata, tenant: document.row.tenant,
        textStart: chunk.charStart,
        ...(chunk.tableHeader !== undefined ? { tableHeader: chunk.tableHeader } : {}),
      };
    });
  });
}

/**
 * What a chunk holds, as filters ask for it ("only code", "Python examples"): the types of the
 * elements it has text of, and the languages of its code blocks (CodeLanguageNames), each once in
 * document order.
 */
interface ChunkContents {
  elementTypes: string[];
  codeLanguages: string[];
}

function chunkContents(document: PreparedDocument, chunk: ElementChunk): ChunkContents {
  const elementTypes = new Set<string>();
  const codeLanguages = new Set<string>();
  for (let index = chunk.startElement; index <= chunk.endElement; index++) {
    const element = document.elements[index]!;
    if (isBlankElement(element)) continue;
    elementTypes.add(element.type);
    const language = codeLanguageTag(element);
    if (language === undefined) continue;
    for (const name of document.codeLanguageNames?.(language) ?? [language.toLowerCase()]) codeLanguages.add(name);
  }
  return { elementTypes: [...elementTypes], codeLanguages: [...codeLanguages] };
}

/** The language tag of a code block, as its parser read it (a Markdown fence's info string, an HTML `language-x` class). */
export function codeLanguageTag(element: DocumentElement): string | undefined {
  const language = element.metadata?.language;
  return element.type === 'code' && typeof language === 'string' && language !== '' ? language : undefined;
}

const sameList = (one: readonly string[], other: readonly string[]) => one.length === other.length && one.every((item, index) => item === other[index]);
const sameContents = (one: ChunkContents, other: ChunkContents) => sameList(one.elementTypes, other.elementTypes) && sameList(one.codeLanguages, other.codeLanguages);

