import { Type, type Static } from 'typebox';
import { SEARCH_MODES } from '../db/entities/index.js';
import { stringEnum } from '../http/string-enum.js';
import { MAX_EMBEDDING_DIMENSION } from '../vectors/unit-vector.js';
import { MAX_CONTEXT_WINDOW } from './context-window.js';
import { MAX_SCOPED_DOCUMENTS } from './document-scope.js';
import { MAX_PER_DOCUMENT_LIMIT } from './per-document-limit.js';

export const MAX_TOP_K = 1000;

/** Knobs shared by every query form (spec 2.6), plus the hybrid fusion knobs of issue 3. */
export const QueryOptionsFields = {
  top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOP_K })),
  filters: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  min_score: Type.Optional(Type.Number()),
  search_mode: Type.Optional(stringEnum(SEARCH_MODES)),
  rerank: Type.Optional(Type.Boolean()),
  skip_cache: Type.Optional(Type.Boolean()),
  multimodal: Type.Optional(Type.Boolean()),
  highlight: Type.Optional(Type.Boolean({ description: 'each result also carries `highlights`: the {start, end} offsets in its text (and its context window) of the words that match a query term, as BM25 matches them' })),
  max_per_document: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: MAX_PER_DOCUMENT_LIMIT,
    description: 'at most this many results from one document, so one long document cannot fill top_k; default no limit',
  })),
  context_window: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: MAX_CONTEXT_WINDOW,
    description: 'each result also carries `context`: its chunk with up to this many chunks of its document before and after, as one text; default 0 (none)',
  })),
  embedding: Type.Optional(Type.Array(Type.Number(), {
    minItems: 1,
    maxItems: MAX_EMBEDDING_DIMENSION,
    description: 'the query\'s own vector, searched instead of the collection model\'s embedding of `query` (semantic and hybrid; keyword ranks by `query`): for vectors upserted from a model the service does not run. Its length must equal the collection\'s dimension',
  })),
  rrf_k: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000, description: 'RRF constant k (hybrid); default 60' })),
  keyword_weight: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'weight of the BM25 list in hybrid fusion' })),
  semantic_weight: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'weight of the vector list in hybrid fusion' })),
};

export const QueryText = Type.String({ minLength: 1, maxLength: 10000, pattern: '\\S' });

/** A query may be scoped to some documents; across collections, each is asked about its own. */
const DocumentScopeField = {
  document_ids: Type.Optional(Type.Array(Type.String({ format: 'uuid' }), {
    minItems: 1,
    maxItems: MAX_SCOPED_DOCUMENTS,
    description: `only chunks of these documents are returned (at most ${MAX_SCOPED_DOCUMENTS}); ranking statistics stay the collection's; 404 names any the collection (any of the collections) does not hold. Across collections, a collection holding none of them is not queried`,
  })),
};

export const CollectionQueryBody = Type.Object({ query: QueryText, ...QueryOptionsFields, ...DocumentScopeField }, { additionalProperties: false });
export type CollectionQueryInput = Static<typeof CollectionQueryBody>;

export const MultiCollectionQueryBody = Type.Object({
  query: QueryText,
  collections: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 50 }),
  ...QueryOptionsFields,
  ...DocumentScopeField,
}, { additionalProperties: false });
export type MultiCollectionQueryInput = Static<typeof MultiCollectionQueryBody>;

export const BatchQueryBody = Type.Object({
  queries: Type.Array(Type.Object({
    collection: Type.String({ minLength: 1, maxLength: 64 }),
    query: QueryText,
    ...QueryOptionsFields,
    ...DocumentScopeField,
  }, { additionalProperties: false }), { minItems: 1, maxItems: 100 }),
}, { additionalProperties: false });
export type BatchQueryInput = Static<typeof BatchQueryBody>;
