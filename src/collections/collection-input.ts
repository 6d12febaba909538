import { Type, type Static } from 'typebox';
import { CHUNK_STRATEGIES, SEARCH_MODES } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';
import { stringEnum } from '../http/string-enum.js';
import { HTTP_URL_FORMAT } from '../http/validation.js';
import { metadataFieldPath } from '../search/filters/field-path.js';
import { MAX_EMBEDDING_DIMENSION } from '../vectors/unit-vector.js';


export const EMBEDDING_PROVIDERS = ['local', 'openai', 'cohere', 'voyage', 'openai_compatible'] as const;
export const COLLECTION_NAME_PATTERN = '^[A-Za-z0-9_-]{1,64}$';
const collectionNameExpression = new RegExp(COLLECTION_NAME_PATTERN);

/** Whether a collection could have this name: every one is created through the pattern above. */
export function isCollectionName(name: string): boolean {
  return collectionNameExpression.test(name);
}

/** Collection fields (spec 2.3, defaults in api-contract 3); `reranking_base_url` is the contract's addition. */
export const CollectionCreateBody = Type.Object({
  name: Type.String({ pattern: COLLECTION_NAME_PATTERN, description: '1-64 characters of letters, digits, "_" or "-"' }),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 10000 }), Type.Null()])),
  embedding_preset_id: Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()])),
  embedding_provider: Type.Optional(stringEnum(EMBEDDING_PROVIDERS)),
  embedding_model: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  embedding_api_key: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()])),
  embedding_base_url: Type.Optional(Type.Union([Type.String({ format: HTTP_URL_FORMAT, maxLength: 2048 }), Type.Null()])),
  dimension: Type.Optional(Type.Integer({ minimum: 2, maximum: MAX_EMBEDDING_DIMENSION })),
  chunk_size: Type.Optional(Type.Integer({ minimum: 50, maximum: 100000 })),
  chunk_overlap: Type.Optional(Type.Integer({ minimum: 0, maximum: 50000 })),
  chunk_strategy: Type.Optional(stringEnum(CHUNK_STRATEGIES)),
  tenant_field: Type.Optional(Type.Union([
    Type.String({ pattern: '^[A-Za-z0-9_.-]{1,255}$', description: 'metadata key of the tenant, or a dotted path into nested metadata ("org.id" is {"org": {"id": ...}})' }),
    Type.Null(),
  ])),
  metadata_schema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  reranking_enabled: Type.Optional(Type.Boolean()),
  reranking_model: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()])),
  reranking_base_url: Type.Optional(Type.Union([Type.String({ format: HTTP_URL_FORMAT, maxLength: 2048 }), Type.Null()])),
  reranking_api_key: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()])),
  multimodal_enabled: Type.Optional(Type.Boolean()),
  multimodal_enrichment_enabled: Type.Optional(Type.Boolean()),
  default_top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  default_min_score: Type.Optional(Type.Number()),
  default_search_mode: Type.Optional(stringEnum(SEARCH_MODES)),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}, { additionalProperties: false });
export type CollectionCreateInput = Static<typeof CollectionCreateBody>;

/**
 * Refuses a `tenant_field` that no query could name, so that every query of the collection would be
 * refused: one with an empty path segment ("a..b", ".a", "a."), which the filter engine refuses, or
 * one a JSON body cannot carry ("__proto__", "constructor.prototype": see acceptJsonBodies).
 */
export function assertTenantFieldPath(field: string | null | undefined): void {
  if (!field) return;
  const path = metadataFieldPath(field);
  if (!path) {
    throw new BadRequestError(`tenant_field "${field}" has an empty path segment: it is a dotted path into nested metadata ("org.id" names {"org": {"id": ...}})`);
  }
  const refusedKey = path.some((segment, index) => segment === '__proto__' || (segment === 'constructor' && path[index + 1] === 'prototype'));
  if (refusedKey) {
    throw new BadRequestError(`tenant_field "${field}" names a "__proto__" key, or "constructor" with "prototype" in it: JSON bodies with such keys are refused, so no query could carry the tenant`);
  }
}

/** Fields an update may change (spec 2.3); every other known field is refused by name. */
export const UPDATABLE_FIELDS = [
  'description', 'metadata', 'embedding_api_key', 'chunk_strategy', 'metadata_schema', 'reranking_enabled',
  'reranking_model', 'reranking_base_url', 'reranking_api_key', 'multimodal_enabled', 'multimodal_enrichment_enabled',
  'default_top_k', 'default_min_score', 'default_search_mode',
] as const;

export type CollectionUpdateInput = Partial<Pick<CollectionCreateInput, (typeof UPDATABLE_FIELDS)[number]>>;

/**
 * Types and bounds of the updatable fields; other fields pass the schema so that the service can
 * refuse them by name ("Field dimension cannot be updated: ...").
 */
export const CollectionUpdateBody = Type.Object(
  Object.fromEntries(UPDATABLE_FIELDS.map((field) => [field, CollectionCreateBody.properties[field]])) as Pick<typeof CollectionCreateBody.properties, (typeof UPDATABLE_FIELDS)[number]>,
  { additionalProperties: true },
);

/** The update body as the OpenAPI document shows it: the updatable fields and no other, as the service enforces. */
export const CollectionUpdateFields = Type.Object(CollectionUpdateBody.properties, { additionalProperties: false });
