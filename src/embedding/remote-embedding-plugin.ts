import { BadRequestError } from '../errors.js';
import type { EmbeddingConfig, EmbeddingModel, EmbeddingModelInfo, PluginDefinition, PluginDependencies } from '../plugins.js';
import { ProviderHttpClient } from './provider-http-client.js';
import { RemoteEmbeddingModel, supportsDimension, type EmbeddingProtocol } from './remote-embedding-model.js';

/** What differs between the HTTP embedding plugins; everything else is shared here. */
export interface RemoteEmbeddingPluginSpec {
  provider: string;
  /** The provider's API base, version segment included; none for self-hosted servers, whose URL is required. */
  defaultBaseUrl?: string;
  models: readonly EmbeddingModelInfo[];
  authHeaders?: (apiKey: string) => Record<string, string>;
  /** `dimension` is undefined only in connection tests of a model of unknown dimension. */
  protocol(model: string, dimension: number | undefined, info: EmbeddingModelInfo | undefined): EmbeddingProtocol;
}

/** The embedding plugin of an HTTP provider: named after it, listing its models. */
export function remoteEmbeddingPlugin(spec: RemoteEmbeddingPluginSpec, description: string): PluginDefinition<'embedding'> {
  return { kind: 'embedding', name: spec.provider, description, models: spec.models, create: (config, deps) => createRemoteEmbeddingModel(spec, config, deps) };
}

/** Builds a plugin's model from a collection's (or preset's) configuration, refusing what cannot work. */
function createRemoteEmbeddingModel(spec: RemoteEmbeddingPluginSpec, config: EmbeddingConfig, deps: PluginDependencies): EmbeddingModel {
  const model = config.model ?? spec.models[0]?.model;
  if (!model) throw new BadRequestError(`embedding_model is required for provider ${spec.provider}`);
  const info = spec.models.find((candidate) => candidate.model === model);
  const dimension = config.dimension ?? info?.dimension;
  if (dimension === undefined && !config.anyDimension) throw new BadRequestError(`dimension is required for ${spec.provider} model ${model}`);
  if (info && dimension !== undefined && !supportsDimension(info, dimension)) throw new BadRequestError(dimensionMessage(spec.provider, info, dimension));
  const baseUrl = config.baseUrl ?? spec.defaultBaseUrl;
  if (!baseUrl) throw new BadRequestError(`embedding_base_url is required for provider ${spec.provider}`);
  const client = new ProviderHttpClient({
    provider: spec.provider, apiKey: config.apiKey, authHeaders: spec.authHeaders, policy: deps.remoteCalls, fetch: deps.fetch, logger: deps.logger,
  });
  return new RemoteEmbeddingModel({ provider: spec.provider, model, dimension, baseUrl, protocol: spec.protocol(model, dimension, info), client });
}

export function dimensionMessage(provider: string, info: EmbeddingModelInfo, dimension: number): string {
  const choices = info.minDimension !== undefined
    ? `${info.minDimension} to ${info.dimension}`
    : [...new Set([info.dimension, ...(info.dimensions ?? [])])].sort((a, b) => a - b).join(', ');
  return `${provider} model ${info.model} cannot produce ${dimension}-dimensional vectors (it offers ${choices})`;
}
