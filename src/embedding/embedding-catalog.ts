import type { PluginRegistry } from '../plugin-registry.js';
import type { EmbeddingModelInfo } from '../plugins.js';
import { MAX_EMBEDDING_DIMENSION } from '../vectors/unit-vector.js';
import { HOSTED_EMBEDDING_PROVIDERS, LOCAL_DEFAULT_DIMENSION } from './embedding-choice.js';
import { pricePerMillionTokens } from './rate-card.js';

export interface CatalogEntry {
  provider: string;
  model: string | null;
  dimension: number | null;
  configurable_dimension: boolean;
  /** The dimensions that may be asked for, when they are a fixed set. */
  dimension_options: number[] | null;
  /** The dimensions that may be asked for, when any value in a range is. */
  dimension_range: { min: number; max: number } | null;
  price_per_million_tokens_usd: number;
  hosted: boolean;
  /** The provider's default model. */
  default: boolean;
  description: string;
}

function dimensionChoices(info: EmbeddingModelInfo): Pick<CatalogEntry, 'dimension_options' | 'dimension_range'> {
  if (info.minDimension !== undefined) return { dimension_options: null, dimension_range: { min: info.minDimension, max: info.dimension } };
  if (info.dimensions?.length) return { dimension_options: [...new Set([info.dimension, ...info.dimensions])].sort((a, b) => a - b), dimension_range: null };
  return { dimension_options: [info.dimension], dimension_range: null };
}

/**
 * GET /v1/embeddings/models: every model this installation offers, with its default dimension,
 * the dimensions it can be asked for and its rate-card price (0 for local and self-hosted).
 * `openai_compatible` serves whatever the server runs, so it is listed once without a model.
 */
export function embeddingCatalog(registry: PluginRegistry): CatalogEntry[] {
  return registry.list('embedding').flatMap((plugin): CatalogEntry[] => {
    const hosted = HOSTED_EMBEDDING_PROVIDERS.includes(plugin.name);
    const base = { provider: plugin.name, hosted, description: plugin.description };
    if (plugin.name === 'local') {
      return [{
        ...base, model: `local-hash-${LOCAL_DEFAULT_DIMENSION}`, dimension: LOCAL_DEFAULT_DIMENSION, configurable_dimension: true,
        dimension_options: null, dimension_range: { min: 2, max: MAX_EMBEDDING_DIMENSION }, price_per_million_tokens_usd: 0, default: true,
      }];
    }
    if (!plugin.models?.length) {
      return [{ ...base, model: null, dimension: null, configurable_dimension: true, dimension_options: null, dimension_range: null, price_per_million_tokens_usd: 0, default: false }];
    }
    return plugin.models.map((info, index) => {
      const choices = dimensionChoices(info);
      return {
        ...base, model: info.model, dimension: info.dimension, configurable_dimension: choices.dimension_range !== null || (choices.dimension_options?.length ?? 0) > 1,
        ...choices, price_per_million_tokens_usd: hosted ? pricePerMillionTokens(plugin.name, info.model) : 0, default: index === 0,
      };
    });
  });
}
