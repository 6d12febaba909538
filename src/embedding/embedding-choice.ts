import { BadRequestError } from '../errors.js';
import type { PluginRegistry } from '../plugin-registry.js';
import { supportsDimension } from './remote-embedding-model.js';
import { dimensionMessage } from './remote-embedding-plugin.js';

/** Providers run by a company that bills per token; they all need a key. */
export const HOSTED_EMBEDDING_PROVIDERS: readonly string[] = ['openai', 'cohere', 'voyage'];
/** api-contract 3: the `local` embedder defaults to 384 dimensions (and takes any other). */
export const LOCAL_DEFAULT_DIMENSION = 384;

export interface EmbeddingChoiceInput {
  provider: string;
  model?: string | null | undefined;
  dimension?: number | null | undefined;
  baseUrl?: string | null | undefined;
  /** Undefined skips the key check: a preset may hold no key, its collections then bring their own. */
  hasApiKey: boolean | undefined;
}

/** Names of the fields in the request being checked, so that a 400 names what the caller sent. */
export interface EmbeddingFieldNames {
  model: string;
  baseUrl: string;
  apiKey: string;
}

/** A self-hosted server has no default address: its base URL is a 400 when missing, named as the caller sent it. */
export function assertSelfHostedBaseUrl(provider: string, baseUrl: string | null | undefined, names: EmbeddingFieldNames): void {
  if (provider === 'openai_compatible' && !baseUrl) {
    throw new BadRequestError(`${names.baseUrl} is required for provider openai_compatible (the API base, e.g. http://localhost:11434/v1)`);
  }
}

/**
 * Fills in the model and dimension a provider defaults to and refuses a combination that cannot
 * work: an unknown provider, a dimension the model cannot produce, an unknown model without a
 * dimension, a self-hosted provider without a URL, a hosted one without a key.
 */
export function checkEmbeddingChoice(registry: PluginRegistry, input: EmbeddingChoiceInput, names: EmbeddingFieldNames): { model: string; dimension: number } {
  const plugin = registry.list('embedding').find((candidate) => candidate.name === input.provider);
  if (!plugin) throw new BadRequestError(`embedding provider "${input.provider}" is not available in this installation`);
  if (input.provider === 'local') {
    const dimension = input.dimension ?? LOCAL_DEFAULT_DIMENSION;
    return { model: input.model ?? `local-hash-${dimension}`, dimension };
  }
  const model = input.model ?? plugin.models?.[0]?.model;
  if (!model) throw new BadRequestError(`${names.model} is required for provider ${input.provider}`);
  const info = plugin.models?.find((candidate) => candidate.model === model);
  const dimension = input.dimension ?? info?.dimension;
  if (dimension === undefined) throw new BadRequestError(`dimension is required for ${input.provider} model ${model}: it is not one this service knows`);
  if (info && !supportsDimension(info, dimension)) throw new BadRequestError(dimensionMessage(input.provider, info, dimension));
  assertSelfHostedBaseUrl(input.provider, input.baseUrl, names);
  if (HOSTED_EMBEDDING_PROVIDERS.includes(input.provider) && input.hasApiKey === false) {
    throw new BadRequestError(`${names.apiKey} is required for provider ${input.provider}`);
  }
  return { model, dimension };
}
