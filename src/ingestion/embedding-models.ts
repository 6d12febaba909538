import type { FastifyBaseLogger } from 'fastify';
import { PerCollectionInstances } from '../collections/per-collection-instances.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { CollectionRecord } from '../db/entities/index.js';
import { CachedEmbeddingModel } from '../embedding/cached-embedding-model.js';
import type { EmbeddingCache } from '../embedding/embedding-cache.js';
import type { EmbeddingUsageLedger } from '../embedding/embedding-usage.js';
import type { PluginRegistry } from '../plugin-registry.js';
import type { EmbeddingConfig, EmbeddingModel, RemoteCallPolicy } from '../plugins.js';

export interface EmbeddingModelsOptions {
  cache: EmbeddingCache;
  ledger: EmbeddingUsageLedger;
  cacheEnabled(): Promise<boolean>;
  remoteCalls: RemoteCallPolicy;
  logger: FastifyBaseLogger;
}

/**
 * One embedding model instance per collection configuration, reused across documents and queries,
 * so that its bound on requests in flight holds for the whole collection. Remote models sit behind
 * the embedding cache and the usage ledger; the built-in `local` model computes a vector faster
 * than the cache could look one up, and costs nothing, so it is used directly.
 */
export class EmbeddingModels {
  private readonly instances = new PerCollectionInstances<EmbeddingModel>();

  constructor(private readonly registry: PluginRegistry, private readonly secrets: SecretBox, private readonly options: EmbeddingModelsOptions) {}

  forCollection(collection: CollectionRecord): EmbeddingModel {
    const settings = [collection.embeddingProvider, collection.embeddingModel, collection.dimension,
      collection.embeddingBaseUrl ?? '', collection.embeddingApiKeySealed ?? ''].join('|');
    return this.instances.get(collection.id, settings, () => {
      const model = this.create(collection.embeddingProvider, {
        model: collection.embeddingModel,
        dimension: collection.dimension,
        baseUrl: collection.embeddingBaseUrl ?? undefined,
        apiKey: collection.embeddingApiKeySealed ? this.secrets.open(collection.embeddingApiKeySealed) : undefined,
      }, this.options.logger.child({ collection: collection.name }));
      if (collection.embeddingProvider === 'local') return model;
      const { cache, ledger, cacheEnabled } = this.options;
      return new CachedEmbeddingModel(model, { collectionId: collection.id, baseUrl: collection.embeddingBaseUrl ?? '', cache, ledger, cacheEnabled });
    });
  }

  /** Drops the model of a deleted collection. */
  forget(collectionId: string): void {
    this.instances.forget(collectionId);
  }

  /** A model outside any collection, neither cached nor accounted (connection tests of presets). */
  create(provider: string, config: EmbeddingConfig, logger = this.options.logger): EmbeddingModel {
    return this.registry.create('embedding', provider, config, { remoteCalls: this.options.remoteCalls, logger });
  }
}
