/**
 * The documented answers of the admin settings, embedding-preset, audit, vector-storage and
 * embedding-cache routes, each taken from the code that builds the body: SettingView of
 * settings.service.ts, serializePreset and `test` of embedding-presets.service.ts,
 * serializeAuditEvent of audit.service.ts, VectorStorageDetails of plugins.ts. Documentation only:
 * Fastify does not serialise through them (see `openapi.response` in src/http/openapi.ts).
 */
import { Type } from 'typebox';
import { EMBEDDING_PROVIDERS } from '../collections/collection-input.js';
import { stringEnum } from '../http/string-enum.js';
import { Nullable, PageOf, Timestamp } from '../http/response-schemas.js';
import { SETTING_SOURCES } from '../settings/settings.service.js';

const SettingValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);

/** One setting as GET, PATCH and reset list them: every setting, with where its value comes from. */
const SettingView = Type.Object({
  key: Type.String(),
  value: SettingValue,
  default: SettingValue,
  source: stringEnum(SETTING_SOURCES, { description: 'saved by an admin, set by the environment (upper-case key), or the default' }),
  description: Type.String(),
}, { additionalProperties: false });

/** GET, PATCH and POST reset answer every setting, not only the ones the request named. */
export const SettingList = Type.Object({ data: Type.Array(SettingView) }, { additionalProperties: false });

export const SettingsCheck = Type.Object({
  ok: Type.Boolean({ description: 'every value would be accepted' }),
  errors: Type.Array(Type.String(), { description: 'one message per refused value; empty when ok' }),
}, { additionalProperties: false });

const Provider = stringEnum(EMBEDDING_PROVIDERS);

/** A preset as every route shows one: the key is write-only (`has_api_key`). */
export const EmbeddingPresetView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  provider: Provider,
  model: Type.String(),
  base_url: Nullable(Type.String()),
  dimension: Type.Integer({ minimum: 1 }),
  has_api_key: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
}, { additionalProperties: false });

export const EmbeddingPresetPage = PageOf(EmbeddingPresetView);

const LatencyMs = Type.Number({ minimum: 0, description: 'the round trip, in milliseconds' });

/**
 * A connection test: a provider failure is an answer (200, `ok: false` with the provider's
 * message), never an error status; settings that cannot form a model at all are a 400.
 */
export const EmbeddingPresetTest = Type.Union([
  Type.Object({
    ok: Type.Literal(true),
    provider: Provider,
    model: Type.String(),
    dimension: Type.Integer({ minimum: 1, description: 'the length of the vector the provider returned' }),
    tokens: Type.Integer({ minimum: 0, description: 'tokens the provider billed for (0 for local models)' }),
    latency_ms: LatencyMs,
  }, { additionalProperties: false }),
  Type.Object({
    ok: Type.Literal(false),
    provider: Provider,
    model: Type.String(),
    error: Type.String({ description: "the provider's answer, keys redacted" }),
    latency_ms: LatencyMs,
  }, { additionalProperties: false }),
]);

const AuditEventView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  actor_id: Nullable(Type.String({ format: 'uuid' })),
  actor_type: stringEnum(['user', 'api_key', 'anonymous'] as const),
  action: Type.String({ description: 'e.g. settings.update, embedding_preset.create' }),
  resource_type: Type.String(),
  resource_id: Nullable(Type.String()),
  details: Type.Object({}, { additionalProperties: true, description: 'what the action changed; never a key or password' }),
  created_at: Timestamp,
}, { additionalProperties: false });

export const AuditEventPage = PageOf(AuditEventView);

/** One collection's vectors (`describe` of the vector store, VectorStorageDetails of plugins.ts). */
const CollectionVectorStorage = Type.Object({
  collection: Type.String(),
  collection_id: Type.String({ format: 'uuid' }),
  dimension: Type.Integer({ minimum: 1 }),
  vectors: Type.Integer({ minimum: 0 }),
  memory_index: Type.Optional(Type.Object({
    loaded: Type.Boolean({ description: 'in memory now' }),
    source: Type.Optional(stringEnum(['snapshot', 'rebuild'] as const, { description: 'a graph saved at the last shutdown, or rebuilt from the database' })),
    load_seconds: Type.Optional(Type.Number({ minimum: 0 })),
    approximate_bytes: Type.Optional(Type.Integer({ minimum: 0 })),
    graph_usable: Type.Optional(Type.Boolean({
      description: 'false once a graph write or search failed or its thread died: searches then scan every row exactly until the next start rebuilds the graph',
    })),
    rows_awaiting_graph: Type.Optional(Type.Integer({
      minimum: 0,
      description: 'rows written whose graph insert is not applied yet: searches score them exactly, and a search without a metadata filter scans all its rows while they are a tenth or more of them',
    })),
  }, { additionalProperties: false, description: 'only for a store that keeps an in-process index' })),
}, { additionalProperties: false });

/** The store, its search settings when it has any, and a page of collections. */
export const VectorStorageOverview = Type.Object({
  store: Type.String({ description: 'the vector store plugin' }),
  settings: Type.Optional(Type.Record(Type.String(), Type.Union([Type.Number(), Type.String()]), { description: "the store's search settings" })),
  ...PageOf(CollectionVectorStorage).properties,
}, { additionalProperties: false });

export const EmbeddingCachePurge = Type.Object({
  purged: Type.Integer({ minimum: 0, description: 'the vectors removed' }),
}, { additionalProperties: false });
