import type { FastifyBaseLogger } from 'fastify';
import { PerCollectionInstances } from '../collections/per-collection-instances.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { CollectionRecord } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';
import type { PluginRegistry } from '../plugin-registry.js';
import type { RemoteCallPolicy, Reranker } from '../plugins.js';

const REMOTE_RERANKING_PROVIDERS = ['cohere', 'voyage', 'openai_compatible'];
/** Hosted APIs answer every call without a key with 401; self-hosted `openai_compatible` servers often need none. */
const KEYED_RERANKING_PROVIDERS = ['cohere', 'voyage'];

/**
 * `reranking_model` (api-contract 3): `local` (also what no model means) or `<provider>/<model>`,
 * split at the first slash so that model names with slashes (`BAAI/bge-reranker-base`) survive.
 */
export function parseRerankingModel(value: string | null): { provider: string; model: string | undefined } {
  if (value === null || value === 'local') return { provider: 'local', model: undefined };
  const slash = value.indexOf('/');
  return slash < 0 ? { provider: value, model: undefined } : { provider: value.slice(0, slash), model: value.slice(slash + 1) };
}

/** Refuses a reranking model this installation cannot run, or a hosted one without its key, naming the field (400). */
export function checkRerankingSettings(registry: PluginRegistry, model: string | null, baseUrl: string | null, hasApiKey: boolean): void {
  const { provider, model: name } = parseRerankingModel(model);
  if (provider === 'local') return;
  if (!REMOTE_RERANKING_PROVIDERS.includes(provider) || !registry.has('reranker', provider) || !name) {
    throw new BadRequestError(`reranking_model must be "local" or "<provider>/<model>" with provider ${REMOTE_RERANKING_PROVIDERS.join(', ')} (e.g. cohere/rerank-v3.5); got "${model}"`);
  }
  if (provider === 'openai_compatible' && !baseUrl) {
    throw new BadRequestError('reranking_base_url is required for an openai_compatible reranking_model ("/rerank" is appended to it)');
  }
  if (KEYED_RERANKING_PROVIDERS.includes(provider) && !hasApiKey) {
    throw new BadRequestError(`reranking_api_key is required for reranking_model ${model}: ${provider} answers every request without one with 401`);
  }
}

/** One reranker instance per collection configuration, so its bound on requests in flight holds for the collection. */
export class RerankerModels {
  private readonly instances = new PerCollectionInstances<Reranker>();

  constructor(
    private readonly registry: PluginRegistry,
    private readonly secrets: SecretBox,
    private readonly options: { remoteCalls: RemoteCallPolicy; logger: FastifyBaseLogger },
  ) {}

  forCollection(collection: CollectionRecord): Reranker {
    const settings = [collection.rerankingModel ?? '', collection.rerankingBaseUrl ?? '', collection.rerankingApiKeySealed ?? ''].join('|');
    return this.instances.get(collection.id, settings, () => {
      const { provider, model } = parseRerankingModel(collection.rerankingModel ?? null);
      return this.registry.create('reranker', provider, {
        ...(model ? { model } : {}),
        ...(collection.rerankingBaseUrl ? { baseUrl: collection.rerankingBaseUrl } : {}),
        ...(collection.rerankingApiKeySealed ? { apiKey: this.secrets.open(collection.rerankingApiKeySealed) } : {}),
      }, { remoteCalls: this.options.remoteCalls, logger: this.options.logger.child({ collection: collection.name }) });
    });
  }

  /** Drops the reranker of a deleted collection. */
  forget(collectionId: string): void {
    this.instances.forget(collectionId);
  }
}
