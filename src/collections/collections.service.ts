import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { recordAudit } from '../audit/audit.service.js';
import { assertCollectionAccess, pinnedCollection, type Actor } from '../auth/actor.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { CollectionEmbedding } from '../embedding/collection-embedding.js';
import { Collection, type CollectionRecord } from '../db/entities/index.js';
import { BadRequestError, ConflictError, NotFoundError, PinnedCollectionDeletedError } from '../errors.js';
import type { SettingsService } from '../settings/settings.service.js';
import type { CollectionDirectory } from './collection-directory.js';
import { compileMetadataSchema } from './metadata-schema.js';
import { settleIndexRemoval } from '../search/pending-index-removals.js';
import { parseRerankingModel } from '../search/reranker-selection.js';
import {
  assertTenantFieldPath, CollectionCreateBody, UPDATABLE_FIELDS, type CollectionCreateInput, type CollectionUpdateInput,
} from './collection-input.js';

export interface CollectionContext {
  em: EntityManager;
  actor: Actor;
}

export interface CollectionDependencies {
  directory: CollectionDirectory;
  secrets: SecretBox;
  settings: SettingsService;
  /** Provider, model, dimension, base URL and key of a new collection: its preset's, or its own fields and the provider's defaults (400 when they cannot work). */
  resolveEmbedding(input: CollectionCreateInput): Promise<CollectionEmbedding>;
  /** Refuses a `reranking_model` this installation cannot run (400 naming the field). */
  checkReranking(model: string | null, baseUrl: string | null, hasApiKey: boolean): void;
  /** Prepares the search indexes of a new collection; none stay when it was deleted meanwhile (prepareIndexesOfLiveCollection). */
  prepareIndexes(collection: CollectionRecord): Promise<void>;
  /** Removes everything the search indexes hold for a collection. */
  dropIndexes(collection: CollectionRecord): Promise<void>;
  /** Drops the collection's embedding model and reranker instances. */
  forgetModels(collection: CollectionRecord): void;
  removeFiles(collection: CollectionRecord): Promise<void>;
  /** Tries now the collection's documents that wait for their embedding provider (JobQueue.retryWaitingForProvider). */
  retryWaitingForProvider(collectionId: string): Promise<number>;
}

function assertValidJsonSchema(schema: Record<string, unknown> | null | undefined): void {
  if (!schema) return;
  compileMetadataSchema(schema);
  assertSchemaAcceptsObjects(schema);
}

/**
 * Metadata is always a JSON object, so a schema whose top-level `type` leaves out "object"
 * (`{"type": "string"}`, `{"type": ["array", "null"]}`) would refuse every upload and upsert.
 * Only `type` is looked at, the usual mistake: whether `enum`, `not` or combinators still admit
 * some object would take a satisfiability check of the whole schema.
 */
function assertSchemaAcceptsObjects(schema: Record<string, unknown>): void {
  const { type } = schema;
  const types = typeof type === 'string' ? [type] : Array.isArray(type) ? type : undefined;
  if (types && !types.includes('object')) {
    throw new BadRequestError(`metadata_schema must accept an object: metadata is always a JSON object, and its type ${JSON.stringify(type)} excludes "object"`);
  }
}

/** A collection the caller may use, for reading: the record may be shared, never modify it. */
export async function findCollection(directory: CollectionDirectory, actor: Actor, name: string): Promise<CollectionRecord> {
  const collection = await directory.find(name);
  assertCollectionAccess(actor, name, collection);
  if (!collection) throw new NotFoundError(`Collection ${name} not found`);
  return collection;
}

/** The collection as an entity of `em`, for changing it. */
async function loadCollectionForUpdate(em: EntityManager, actor: Actor, name: string): Promise<CollectionRecord> {
  const collection = await em.findOne(Collection, { name });
  assertCollectionAccess(actor, name, collection);
  if (!collection) throw new NotFoundError(`Collection ${name} not found`);
  return collection;
}

export async function listCollections(em: EntityManager, actor: Actor, query: { name?: string | undefined; limit: number; offset: number }) {
  const where: Record<string, unknown> = {};
  // A case-insensitive substring match (api-contract 5); LIKE wildcards in the input are literal.
  if (query.name) where.name = { $ilike: `%${query.name.replace(/[\\%_]/g, (c) => `\\${c}`)}%` };
  const pin = pinnedCollection(actor);
  // A pinned key sees its collection only, by id (a later one under its name is another); the name filter still applies.
  if (pin) where.id = pin.id;
  const [data, total] = await em.findAndCount(Collection, where, { orderBy: { name: 'asc' }, limit: query.limit, offset: query.offset });
  // The key's cached record may predate the delete of its collection: an empty list then is that delete.
  if (pin && total === 0 && await em.count(Collection, { id: pin.id }) === 0) throw new PinnedCollectionDeletedError(pin.name);
  return { data, total };
}

export async function createCollection(context: CollectionContext, deps: CollectionDependencies, input: CollectionCreateInput): Promise<CollectionRecord> {
  const { em, actor } = context;
  // A pinned key creates nothing: its own collection exists (409 below) unless it was deleted (403).
  if (pinnedCollection(actor)) assertCollectionAccess(actor, input.name, await em.findOne(Collection, { name: input.name }));
  const embedding = await deps.resolveEmbedding(input);
  deps.checkReranking(input.reranking_model ?? null, input.reranking_base_url ?? null, Boolean(input.reranking_api_key));
  const chunkSize = input.chunk_size ?? await deps.settings.get<number>('default_chunk_size');
  // The default overlap is below the default size (settings.service.ts); with a size of the
  // collection's own it is kept to half of it. Halving it always changed a saved 900/850 pair to 450.
  const defaultOverlap = await deps.settings.get<number>('default_chunk_overlap');
  const chunkOverlap = input.chunk_overlap ?? (input.chunk_size === undefined ? defaultOverlap : Math.min(defaultOverlap, Math.floor(chunkSize / 2)));
  if (chunkOverlap >= chunkSize) throw new BadRequestError('chunk_overlap must be smaller than chunk_size');
  assertTenantFieldPath(input.tenant_field);
  assertValidJsonSchema(input.metadata_schema);
  if (await em.count(Collection, { name: input.name }) > 0) throw new ConflictError(`Collection ${input.name} already exists`);

  const now = new Date();
  const collection = em.create(Collection, {
    id: randomUUID(),
    name: input.name,
    description: input.description ?? null,
    embeddingPresetId: embedding.presetId,
    embeddingProvider: embedding.provider,
    embeddingModel: embedding.model,
    embeddingBaseUrl: embedding.baseUrl,
    embeddingApiKeySealed: embedding.apiKeySealed,
    dimension: embedding.dimension,
    chunkSize,
    chunkOverlap,
    chunkStrategy: input.chunk_strategy ?? 'recursive',
    tenantField: input.tenant_field ?? null,
    metadataSchema: input.metadata_schema ?? null,
    rerankingEnabled: input.reranking_enabled ?? false,
    rerankingModel: input.reranking_model ?? null,
    rerankingBaseUrl: input.reranking_base_url ?? null,
    rerankingApiKeySealed: input.reranking_api_key ? deps.secrets.seal(input.reranking_api_key) : null,
    multimodalEnabled: input.multimodal_enabled ?? false,
    multimodalEnrichmentEnabled: input.multimodal_enrichment_enabled ?? false,
    defaultTopK: input.default_top_k ?? 10,
    defaultMinScore: input.default_min_score ?? 0,
    defaultSearchMode: input.default_search_mode ?? 'hybrid',
    metadata: input.metadata ?? {},
    writeVersion: 0,
    createdAt: now,
    updatedAt: now,
  });
  recordAudit(em, actor, { action: 'collection.create', resourceType: 'collection', resourceId: collection.id, details: { name: collection.name } });
  try {
    await em.flush();
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new ConflictError(`Collection ${input.name} already exists`);
    throw error;
  }
  await deps.prepareIndexes(collection);
  return collection;
}

export function assertUpdatableFields(body: Record<string, unknown>): CollectionUpdateInput {
  const known = Object.keys(CollectionCreateBody.properties);
  for (const field of Object.keys(body)) {
    if (!known.includes(field)) throw new BadRequestError(`Unknown field: ${field}`);
    if (!(UPDATABLE_FIELDS as readonly string[]).includes(field)) throw new BadRequestError(`Field ${field} cannot be updated: it is fixed when the collection is created (create another collection to change it); the updatable fields are ${UPDATABLE_FIELDS.join(', ')}`);
  }
  return body as CollectionUpdateInput;
}

export async function updateCollection(context: CollectionContext, deps: CollectionDependencies, name: string, input: CollectionUpdateInput): Promise<CollectionRecord> {
  const { em, actor } = context;
  const collection = await loadCollectionForUpdate(em, actor, name);
  assertValidJsonSchema(input.metadata_schema);
  assertRerankingKeyStaysWithItsHost(collection, input);
  if (input.description !== undefined) collection.description = input.description;
  if (input.metadata !== undefined) collection.metadata = input.metadata;
  if (input.embedding_api_key !== undefined) collection.embeddingApiKeySealed = input.embedding_api_key === null ? null : deps.secrets.seal(input.embedding_api_key);
  if (input.chunk_strategy !== undefined) collection.chunkStrategy = input.chunk_strategy;
  if (input.metadata_schema !== undefined) collection.metadataSchema = input.metadata_schema;
  if (input.reranking_enabled !== undefined) collection.rerankingEnabled = input.reranking_enabled;
  if (input.reranking_model !== undefined) collection.rerankingModel = input.reranking_model;
  if (input.reranking_base_url !== undefined) collection.rerankingBaseUrl = input.reranking_base_url;
  if (input.reranking_api_key !== undefined) collection.rerankingApiKeySealed = input.reranking_api_key === null ? null : deps.secrets.seal(input.reranking_api_key);
  // Only a change to reranking is checked, so a collection stored before a rule existed still takes other updates.
  const rerankingChanged = input.reranking_model !== undefined || input.reranking_base_url !== undefined || input.reranking_api_key !== undefined;
  if (rerankingChanged) deps.checkReranking(collection.rerankingModel ?? null, collection.rerankingBaseUrl ?? null, collection.rerankingApiKeySealed !== null);
  if (input.multimodal_enabled !== undefined) collection.multimodalEnabled = input.multimodal_enabled;
  if (input.multimodal_enrichment_enabled !== undefined) collection.multimodalEnrichmentEnabled = input.multimodal_enrichment_enabled;
  if (input.default_top_k !== undefined) collection.defaultTopK = input.default_top_k;
  if (input.default_min_score !== undefined) collection.defaultMinScore = input.default_min_score;
  if (input.default_search_mode !== undefined) collection.defaultSearchMode = input.default_search_mode;
  collection.updatedAt = new Date();
  recordAudit(em, actor, { action: 'collection.update', resourceType: 'collection', resourceId: collection.id, details: { fields: Object.keys(input) } });
  await em.flush();
  // Query defaults and reranking change answers, so cached results must not outlive the update. An
  // increment in SQL, as ingestion's: writing the version read before (plus one) took the version
  // back when documents were written meanwhile, and answers cached under it were served again.
  await em.getConnection().execute('update collections set write_version = write_version + 1 where id = ?', [collection.id]);
  deps.directory.forget(collection.id);
  // A new key may be what documents waiting for the provider need (a refused quota, say).
  if (input.embedding_api_key !== undefined) await deps.retryWaitingForProvider(collection.id);
  return collection;
}

/**
 * Keys are write-only: a reranker moved to another host (a new `reranking_base_url`, or a model of
 * another provider, whose default host differs) must bring its key, or the stored one would be sent
 * there. The built-in reranker sends nothing, so moving to it needs no key.
 */
function assertRerankingKeyStaysWithItsHost(collection: CollectionRecord, input: CollectionUpdateInput): void {
  if (!collection.rerankingApiKeySealed || input.reranking_api_key !== undefined) return;
  const hostChanged = input.reranking_base_url !== undefined && input.reranking_base_url !== (collection.rerankingBaseUrl ?? null);
  const provider = input.reranking_model === undefined ? null : parseRerankingModel(input.reranking_model).provider;
  const providerChanged = provider !== null && provider !== 'local' && provider !== parseRerankingModel(collection.rerankingModel ?? null).provider;
  if (hostChanged || providerChanged) {
    throw new BadRequestError(`reranking_api_key is required with a new ${hostChanged ? 'reranking_base_url' : 'reranking provider'}: the stored key is never sent to another host (send the key again, or null to clear it)`);
  }
}

/**
 * The row goes first (its documents and chunks with it: cascades, and the triggers of migration
 * 0008), then the index entries; the statement deleting the row also records their removal as
 * owed, settled once the indexes are dropped. When dropping fails, the request answers 500 and
 * PendingIndexRemovalSweep drops them later: a retried DELETE is a 404 and could not.
 */
export async function deleteCollection(context: CollectionContext, deps: CollectionDependencies, name: string): Promise<void> {
  const { em, actor } = context;
  const collection = await loadCollectionForUpdate(em, actor, name);
  const runStatement = (query: string, params: unknown[]) => em.getConnection().execute(query, params);
  // No record when another request deleted the row first: that request owes the removal.
  const [owed] = await runStatement(
    `with collection_gone as (delete from collections where id = ? returning id)
     insert into pending_index_removals (collection_id) select id from collection_gone returning id`,
    [collection.id],
  ) as Array<{ id: string | number }>;
  deps.directory.forget(collection.id);
  recordAudit(em, actor, { action: 'collection.delete', resourceType: 'collection', resourceId: collection.id, details: { name } });
  await em.flush();
  await deps.dropIndexes(collection);
  await settleIndexRemoval(runStatement, owed ? Number(owed.id) : null);
  await deps.removeFiles(collection);
  deps.forgetModels(collection);
}

export function serializeCollection(collection: CollectionRecord) {
  return {
    id: collection.id,
    name: collection.name,
    description: collection.description ?? null,
    embedding_preset_id: collection.embeddingPresetId ?? null,
    embedding_provider: collection.embeddingProvider,
    embedding_model: collection.embeddingModel,
    embedding_base_url: collection.embeddingBaseUrl ?? null,
    has_embedding_api_key: Boolean(collection.embeddingApiKeySealed),
    dimension: collection.dimension,
    chunk_size: collection.chunkSize,
    chunk_overlap: collection.chunkOverlap,
    chunk_strategy: collection.chunkStrategy,
    tenant_field: collection.tenantField ?? null,
    metadata_schema: collection.metadataSchema ?? null,
    reranking_enabled: collection.rerankingEnabled,
    // No model is the built-in one (api-contract 3): the record shows what reranking runs.
    reranking_model: collection.rerankingModel ?? 'local',
    reranking_base_url: collection.rerankingBaseUrl ?? null,
    has_reranking_api_key: Boolean(collection.rerankingApiKeySealed),
    multimodal_enabled: collection.multimodalEnabled,
    multimodal_enrichment_enabled: collection.multimodalEnrichmentEnabled,
    default_top_k: collection.defaultTopK,
    default_min_score: collection.defaultMinScore,
    default_search_mode: collection.defaultSearchMode,
    metadata: collection.metadata,
    created_at: collection.createdAt.toISOString(),
    updated_at: collection.updatedAt.toISOString(),
  };
}
