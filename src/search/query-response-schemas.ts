/**
 * The documented answers of the query routes (spec 2.6, api-contract 5), as built by
 * collection-query.ts (QueryResponse, QueryResult, QueryTimings) and query.routes.ts. Documentation
 * only: Fastify does not serialise through them (see `openapi.response` in src/http/openapi.ts).
 */
import { Type } from 'typebox';
import { SEARCH_MODES } from '../db/entities/index.js';
import { ChunkMetadata, DocumentView } from '../documents/document-response-schemas.js';
import { stringEnum } from '../http/string-enum.js';

/** An image shown beside a result with `multimodal: true` (MultimodalElement of multimodal-elements.ts). */
const MultimodalElement = Type.Object({
  id: Type.String({ format: 'uuid' }),
  type: Type.Literal('image'),
  text: Type.String({ description: 'the text the image stands for in its document (alt text, OCR)' }),
  page: Type.Union([Type.Integer(), Type.Null()], { description: 'the page of a PDF; null for other formats' }),
  heading_path: Type.Array(Type.String(), { description: 'the headings the image sits under' }),
  content_type: Type.Union([Type.String(), Type.Null()]),
  width: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'pixels, as shown; null when the picture\'s size could not be read' }),
  height: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'pixels, as shown; null when the picture\'s size could not be read' }),
  caption: Type.Union([Type.String(), Type.Null()], { description: 'the generated caption, when a captioning model is configured' }),
  content_url: Type.String({ description: 'path of the stored picture' }),
}, { additionalProperties: false });

/** Where a text holds a query term (Highlight of highlights.ts): UTF-16 offsets, as JavaScript strings index. */
const Highlights = Type.Array(Type.Object({
  start: Type.Integer({ minimum: 0 }),
  end: Type.Integer({ minimum: 1, description: 'exclusive' }),
}, { additionalProperties: false }), { description: 'with `highlight: true`: where the text holds a query term, in order' });

/** A result's chunk with its neighbours (ResultContext of context-window.ts). */
const ResultContext = Type.Object({
  text: Type.String({ description: 'the chunks joined in order, their overlap written once' }),
  first_chunk_index: Type.Integer({ minimum: 0 }),
  last_chunk_index: Type.Integer({ minimum: 0 }),
  highlights: Type.Optional(Highlights),
}, { additionalProperties: false });

const queryResultFields = {
  id: Type.String({ description: 'the chunk id (a raw vector keeps the id it was upserted with)' }),
  document_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'null for a raw vector' }),
  document_filename: Type.Union([Type.String(), Type.Null()], { description: 'the file name of the result\'s document, for citing it; null for a raw vector' }),
  document_title: Type.Union([Type.String(), Type.Null()], { description: 'the title of the result\'s document (as the document states it: front matter, `<title>`, file properties, else its first level-1 heading); null for a raw vector or a document without one' }),
  chunk_index: Type.Integer({ minimum: 0 }),
  text: Type.String(),
  score: Type.Number({ description: 'the score the results are ordered by: cosine (semantic), BM25 (keyword), scaled RRF (hybrid), or the reranker\'s' }),
  scores: Type.Object({
    semantic: Type.Optional(Type.Number()),
    keyword: Type.Optional(Type.Number()),
    rerank: Type.Optional(Type.Number()),
  }, { additionalProperties: false, description: 'the score of each list the result was found in, and the reranker\'s' }),
  metadata: ChunkMetadata,
  collection: Type.String(),
  multimodal_elements: Type.Optional(Type.Array(MultimodalElement, { description: 'with `multimodal: true`: the images of the result\'s page or section' })),
  highlights: Type.Optional(Highlights),
  context: Type.Optional(Type.Union([ResultContext, Type.Null()], { description: 'with `context_window`: the result\'s chunk and its neighbours; null for a raw vector' })),
};

/** One result of a query (QueryResult of collection-query.ts). */
export const QueryResult = Type.Object(queryResultFields, { additionalProperties: false });

/** A result of a multi-collection query: its `score` is the fused one, its collection's own beside it. */
const FusedQueryResult = Type.Object({
  ...queryResultFields,
  score: Type.Number({ description: 'the RRF score across the collections, scaled so that rank 1 of any collection is 1.0' }),
  collection_score: Type.Number({ description: 'the score within its own collection' }),
}, { additionalProperties: false });

/** With `document_ids`: the listed documents that are not ready (DocumentNotReady of document-scope.ts). */
const DocumentsNotReady = Type.Array(Type.Pick(DocumentView, ['id', 'status', 'progress', 'error'], { additionalProperties: false }), {
  description: 'with `document_ids`: the listed documents not yet (or no longer) ready, in the order listed; the results hold only what of them is indexed. Such an answer is not cached',
});

/** What each stage took; a stage that did not run is absent. */
const StageTimings = Type.Object({
  scope_ms: Type.Optional(Type.Number({ description: 'finding the chunks of document_ids' })),
  range_index_ms: Type.Optional(Type.Number({
    description: 'on PostgreSQL, with a range filter: reading the chunks in range from the collection\'s range indexes, present when they were few enough to be ranked by themselves (METADATA_RANGE_INDEXES)',
  })),
  embedding_ms: Type.Optional(Type.Number()),
  semantic_ms: Type.Optional(Type.Number()),
  keyword_ms: Type.Optional(Type.Number()),
  fusion_ms: Type.Optional(Type.Number()),
  per_document_ms: Type.Optional(Type.Number({ description: 'applying max_per_document, with any deeper searches it needed' })),
  fetch_ms: Type.Number(),
  rerank_ms: Type.Optional(Type.Number()),
  context_ms: Type.Optional(Type.Number({ description: 'reading the neighbouring chunks of context_window' })),
  total_ms: Type.Number(),
}, { additionalProperties: false });

/** A cached answer times its lookup only: the stored stage timings would add up to more than it. */
const CachedTimings = Type.Object({
  total_ms: Type.Number(),
  cached: Type.Literal(true),
}, { additionalProperties: false });

const QueryTimings = Type.Union([StageTimings, CachedTimings], { description: 'milliseconds per stage, or of the cache lookup for a cached answer' });

/** POST /v1/collections/{name}/query (QueryResponse of collection-query.ts). */
export const CollectionQueryResponse = Type.Object({
  results: Type.Array(QueryResult),
  query: Type.String(),
  collection: Type.String(),
  search_mode: stringEnum(SEARCH_MODES, { description: 'the mode that ran: the request\'s, else the collection\'s default' }),
  total: Type.Integer({ minimum: 0, description: 'the number of results returned' }),
  timings: QueryTimings,
  documents_not_ready: Type.Optional(DocumentsNotReady),
}, { additionalProperties: false });

/** POST /v1/query: results of several collections fused by rank. */
export const MultiCollectionQueryResponse = Type.Object({
  results: Type.Array(FusedQueryResult),
  query: Type.String(),
  collection: Type.Null(),
  collections: Type.Array(Type.String(), { description: 'the collections queried, each once' }),
  total: Type.Integer({ minimum: 0 }),
  timings: Type.Object({
    total_ms: Type.Number(),
    scope_ms: Type.Optional(Type.Number({ description: 'with `document_ids`: the lookup of the listed documents and their chunks, once for every collection' })),
    per_collection: Type.Record(Type.String(), QueryTimings, { description: 'the timings of each collection\'s query, by collection name (with `document_ids`, of the collections holding any of them)' }),
  }, { additionalProperties: false }),
  documents_not_ready: Type.Optional(DocumentsNotReady),
}, { additionalProperties: false });

const BatchQueryAnswer = Type.Object({
  collection: Type.String(),
  query: Type.String(),
  results: Type.Array(QueryResult),
  total: Type.Integer({ minimum: 0 }),
  timings: QueryTimings,
  documents_not_ready: Type.Optional(DocumentsNotReady),
}, { additionalProperties: false });

const BatchQueryError = Type.Object({
  collection: Type.String(),
  query: Type.String(),
  error: Type.Object({
    status: Type.Integer({ description: 'the status the query alone would have answered' }),
    detail: Type.String(),
  }, { additionalProperties: false }),
}, { additionalProperties: false });

/** POST /v1/batch/query: one entry per item, in order (api-contract 5). */
export const BatchQueryResponse = Type.Object({
  results: Type.Array(Type.Union([BatchQueryAnswer, BatchQueryError]), { description: 'each item\'s answer, or its error (an unknown collection is an item error)' }),
}, { additionalProperties: false });
