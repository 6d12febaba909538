/**
 * Success bodies of the collection and statistics routes, as the OpenAPI document shows them
 * (`config.openapi.response`: documentation only, checked against real answers by
 * test/http/openapi-responses-documents.test.ts). Each mirrors the function that builds the body.
 */
import { Type } from 'typebox';
import { DATABASE_KINDS } from '../db/database.js';
import { CHUNK_STRATEGIES, DOCUMENT_STATUSES, SEARCH_MODES } from '../db/entities/index.js';
import { stringEnum } from '../http/string-enum.js';
import { Nullable, PageOf, Timestamp } from '../http/response-schemas.js';


/** A collection record (`serializeCollection`); API keys are never shown, only whether one is set. */
export const CollectionView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  description: Nullable(Type.String()),
  embedding_preset_id: Nullable(Type.String({ format: 'uuid' })),
  embedding_provider: Type.String(),
  embedding_model: Type.String(),
  embedding_base_url: Nullable(Type.String()),
  has_embedding_api_key: Type.Boolean({ description: 'the collection has its own embedding API key' }),
  dimension: Type.Integer(),
  chunk_size: Type.Integer(),
  chunk_overlap: Type.Integer(),
  chunk_strategy: stringEnum(CHUNK_STRATEGIES),
  tenant_field: Nullable(Type.String({ description: 'metadata key (or dotted path) of the tenant' })),
  metadata_schema: Nullable(Type.Record(Type.String(), Type.Unknown())),
  reranking_enabled: Type.Boolean(),
  reranking_model: Type.String({ description: '"local" (the built-in reranker, also when none was set) or <provider>/<model>' }),
  reranking_base_url: Nullable(Type.String()),
  has_reranking_api_key: Type.Boolean({ description: 'the collection has its own reranking API key' }),
  multimodal_enabled: Type.Boolean(),
  multimodal_enrichment_enabled: Type.Boolean(),
  default_top_k: Type.Integer(),
  default_min_score: Type.Number(),
  default_search_mode: stringEnum(SEARCH_MODES),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
  updated_at: Timestamp,
}, { additionalProperties: false });

export const CollectionList = PageOf(CollectionView);

export const TruncateResult = Type.Object({
  deleted_documents: Type.Integer(),
}, { additionalProperties: false });

/** Every document status, each with its count (0 included). */
const DocumentsByStatus = Type.Object(
  Object.fromEntries(DOCUMENT_STATUSES.map((status) => [status, Type.Integer()])) as Record<(typeof DOCUMENT_STATUSES)[number], ReturnType<typeof Type.Integer>>,
  { additionalProperties: false },
);

const StorageBytes = Type.Object({
  files_bytes: Type.Integer({ description: 'uploaded originals' }),
  chunk_text_bytes: Type.Integer(),
  vector_bytes: Type.Integer({ description: 'float32 vectors: 4 bytes per dimension' }),
}, { additionalProperties: false });

/** Lifetime embedding use (`EmbeddingUsageSummary`): an estimate of cost, not a bill. */
const EmbeddingUsage = {
  tokens: Type.Integer({ description: 'tokens the provider billed' }),
  cost_usd_estimate: Type.Number({ description: 'priced by the rate card' }),
  texts: Type.Integer({ description: 'texts asked for, cached or not' }),
  cache_hits: Type.Integer(),
  cache_misses: Type.Integer(),
  cache_hit_ratio: Type.Number({ description: 'share of texts answered from the cache, 0 when none were asked for' }),
};

/** `collectionStats` with the collection's embedding model and use. */
export const CollectionStatsView = Type.Object({
  collection: Type.String(),
  documents: Type.Integer(),
  documents_by_status: DocumentsByStatus,
  waiting_for_provider: Type.Object({
    documents: Type.Integer({ description: 'pending documents waiting for their embedding provider, which is unavailable (PROVIDER_OUTAGE_WAIT_S)' }),
    since: Nullable(Type.String({ format: 'date-time', description: 'since when the first of them has waited' })),
    error: Nullable(Type.String({ description: 'the provider\'s latest failure' })),
  }, { additionalProperties: false }),
  chunks: Type.Integer(),
  raw_vectors: Type.Integer({ description: 'chunks upserted as vectors, with no document' }),
  vectors: Type.Integer({ description: 'vectors in the vector store' }),
  dimension: Type.Integer(),
  storage_bytes: Type.Integer({ description: 'the sum of `storage`' }),
  storage: StorageBytes,
  range_indexes: Type.Array(Type.Object({
    field: Type.String(),
    type: Type.Union([Type.Literal('number'), Type.Literal('string')], { description: 'the type of bound the index serves' }),
    state: Type.Union([Type.Literal('ready'), Type.Literal('building'), Type.Literal('failed')]),
  }, { additionalProperties: false }), {
    description: 'on PostgreSQL, the indexes over chunk metadata made for the collection\'s range filters (METADATA_RANGE_INDEXES); always empty on the embedded database, whose vector store indexes metadata values in memory',
  }),
  embedding: Type.Object({ provider: Type.String(), model: Type.String(), ...EmbeddingUsage }, { additionalProperties: false }),
}, { additionalProperties: false });

const QueryCount = { query: Type.String({ description: 'the form asked most often of queries alike but for case and white space' }), count: Type.Integer() };

const TOP_LIST = 'at most 20; each past day counts its 500 most asked query texts (and its 500 most asked zero-result ones), today every text; ties at the end of a list go by an internal key';

/** `collectionAnalytics`: queries of the last `window_days` UTC days, today included. */
export const CollectionAnalyticsView = Type.Object({
  collection: Type.String(),
  window_days: Type.Integer(),
  queries_total: Type.Integer(),
  avg_latency_ms: Type.Number(),
  zero_result_queries_total: Type.Integer(),
  cache_hit_ratio: Type.Number(),
  queries_per_day: Type.Array(Type.Object({
    date: Type.String({ format: 'date-time', description: 'the UTC day, at midnight' }),
    queries: Type.Integer(),
    avg_latency_ms: Type.Number(),
  }, { additionalProperties: false }), { description: 'days with queries only, oldest first' }),
  top_queries: Type.Array(Type.Object({ ...QueryCount, avg_results: Type.Number() }, { additionalProperties: false }), { description: TOP_LIST }),
  zero_result_queries: Type.Array(Type.Object(QueryCount, { additionalProperties: false }), { description: TOP_LIST }),
}, { additionalProperties: false });

/** GET /v1/stats. */
export const InstanceStatsView = Type.Object({
  collections: Type.Integer(),
  documents: Type.Integer(),
  documents_by_status: DocumentsByStatus,
  chunks: Type.Integer(),
  storage_bytes: Type.Integer({ description: 'the sum of `storage`' }),
  storage: StorageBytes,
  queries_last_24h: Type.Integer(),
  ingestion_queue: Type.Integer({ description: 'jobs queued or running' }),
  database: stringEnum(DATABASE_KINDS),
  vector_store: Type.String({ description: 'the vector store plugin' }),
  keyword_index: Type.String({ description: 'the keyword index plugin' }),
  embedding: Type.Object({
    ...EmbeddingUsage,
    cache_enabled: Type.Boolean(),
    cache_entries: Type.Integer(),
  }, { additionalProperties: false, description: 'lifetime use, deleted collections included' }),
  vector_index_cache: Type.Optional(Type.Object({
    index_bytes: Type.Integer({ description: "every pgvector HNSW index of the database, together" }),
    shared_buffers_bytes: Type.Integer({ description: "PostgreSQL's buffer cache; searches slow down once the indexes outgrow it" }),
  }, { additionalProperties: false, description: 'PostgreSQL with the pgvector store only' })),
}, { additionalProperties: false });

/** One model of GET /v1/embeddings/models (`CatalogEntry`). */
const EmbeddingModelEntry = Type.Object({
  provider: Type.String(),
  model: Nullable(Type.String({ description: 'null for a provider that serves whatever its server runs (openai_compatible)' })),
  dimension: Nullable(Type.Integer({ description: 'the default dimension' })),
  configurable_dimension: Type.Boolean(),
  dimension_options: Nullable(Type.Array(Type.Integer(), { description: 'the dimensions that may be asked for, when a fixed set' })),
  dimension_range: Nullable(Type.Object({ min: Type.Integer(), max: Type.Integer() }, { additionalProperties: false, description: 'when any dimension in a range may be asked for' })),
  price_per_million_tokens_usd: Type.Number({ description: '0 for local and self-hosted models' }),
  hosted: Type.Boolean(),
  default: Type.Boolean({ description: "the provider's default model" }),
  description: Type.String(),
}, { additionalProperties: false });

export const EmbeddingModelList = PageOf(EmbeddingModelEntry);
