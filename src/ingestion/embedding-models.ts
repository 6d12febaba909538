import type { SecretBox } from '../crypto/secret-box.js';
import type { CollectionRecord } from '../db/entities/index.js';
import type { PluginRegistry } from '../plugin-registry.js';
import type { EmbeddingModel } from '../plugins.js';

/** One embedding model instance per collection configuration, reused across documents and queries. */
export class EmbeddingModels {
  private readonly cache = new Map<string, EmbeddingModel>();

  constructor(private readonly registry: PluginRegistry, private readonly secrets: SecretBox) {}

  forCollection(collection: CollectionRecord): EmbeddingModel {
    const cacheKey = [collection.id, collection.embeddingProvider, collection.embeddingModel, collection.dimension,
      collection.embeddingBaseUrl ?? '', collection.embeddingApiKeySealed ?? ''].join('|');
    let model = this.cache.get(cacheKey);
    if (!model) {
      model = this.registry.create('embedding', collection.embeddingProvider, {
        model: collection.embeddingModel,
        dimension: collection.dimension,
        baseUrl: collection.embeddingBaseUrl ?? undefined,
        apiKey: collection.embeddingApiKeySealed ? this.secrets.open(collection.embeddingApiKeySealed) : undefined,
      }, {});
      this.cache.set(cacheKey, model);
    }
    return model;
  }
}
