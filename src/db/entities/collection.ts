import { defineEntity, type InferEntity } from '@mikro-orm/core';

export const CHUNK_STRATEGIES = ['paragraph', 'recursive'] as const;
export type ChunkStrategy = (typeof CHUNK_STRATEGIES)[number];
export const SEARCH_MODES = ['semantic', 'keyword', 'hybrid'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

export const Collection = defineEntity({
  name: 'Collection',
  tableName: 'collections',
  properties: (p) => ({
    id: p.uuid().primary(),
    name: p.string(),
    description: p.text().nullable(),
    embeddingPresetId: p.uuid().nullable(),
    embeddingProvider: p.string(),
    embeddingModel: p.string(),
    embeddingBaseUrl: p.text().nullable(),
    embeddingApiKeySealed: p.text().nullable(),
    dimension: p.integer(),
    chunkSize: p.integer(),
    chunkOverlap: p.integer(),
    chunkStrategy: p.string().$type<ChunkStrategy>(),
    tenantField: p.string().nullable(),
    metadataSchema: p.json<Record<string, unknown>>().nullable(),
    rerankingEnabled: p.boolean(),
    rerankingModel: p.string().nullable(),
    rerankingBaseUrl: p.text().nullable(),
    rerankingApiKeySealed: p.text().nullable(),
    multimodalEnabled: p.boolean(),
    multimodalEnrichmentEnabled: p.boolean(),
    defaultTopK: p.integer(),
    defaultMinScore: p.double().$type<number>(),
    defaultSearchMode: p.string().$type<SearchMode>(),
    metadata: p.json<Record<string, unknown>>(),
    /** Bumped on every change to the collection's content: the query cache keys on it. */
    writeVersion: p.bigint('number'),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  }),
});
export type CollectionRecord = InferEntity<typeof Collection>;
