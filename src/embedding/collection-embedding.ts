import type { CollectionCreateInput } from '../collections/collection-input.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { BadRequestError } from '../errors.js';
import type { PluginRegistry } from '../plugin-registry.js';
import { checkEmbeddingChoice, HOSTED_EMBEDDING_PROVIDERS } from './embedding-choice.js';
import type { EmbeddingPresetService } from './embedding-presets.service.js';

/** The embedding settings a new collection is created with. */
export interface CollectionEmbedding {
  presetId: string | null;
  provider: string;
  model: string;
  dimension: number;
  baseUrl: string | null;
  apiKeySealed: string | null;
}

const COLLECTION_FIELD_NAMES = { model: 'embedding_model', baseUrl: 'embedding_base_url', apiKey: 'embedding_api_key' };

/**
 * A collection's embedding settings from its create request: from the preset named by
 * `embedding_preset_id` (provider, model, dimension, base URL and key), or from its own fields and
 * the provider's defaults. Fields sent beside a preset must agree with it; a key sent beside a
 * preset replaces the preset's for this collection.
 */
export async function resolveCollectionEmbedding(
  deps: { registry: PluginRegistry; presets: EmbeddingPresetService; secrets: SecretBox },
  input: CollectionCreateInput,
): Promise<CollectionEmbedding> {
  const ownKey = input.embedding_api_key ? deps.secrets.seal(input.embedding_api_key) : null;
  if (input.embedding_preset_id) {
    const preset = await deps.presets.find(input.embedding_preset_id);
    if (!preset) throw new BadRequestError(`embedding_preset_id ${input.embedding_preset_id} is not an embedding preset`);
    const presetValues: Array<[string, unknown, unknown]> = [
      ['embedding_provider', input.embedding_provider, preset.provider], ['embedding_model', input.embedding_model, preset.model],
      ['dimension', input.dimension, preset.dimension], ['embedding_base_url', input.embedding_base_url, preset.baseUrl],
    ];
    for (const [field, sent, fromPreset] of presetValues) {
      if (sent !== undefined && sent !== fromPreset) {
        throw new BadRequestError(`${field} differs from embedding preset ${preset.name} (${String(fromPreset)}); leave it out to take the preset's`);
      }
    }
    const apiKeySealed = ownKey ?? preset.apiKeySealed;
    if (HOSTED_EMBEDDING_PROVIDERS.includes(preset.provider) && apiKeySealed === null) {
      throw new BadRequestError(`embedding_api_key is required: embedding preset ${preset.name} holds no key for ${preset.provider}`);
    }
    return { presetId: preset.id, provider: preset.provider, model: preset.model, dimension: preset.dimension, baseUrl: preset.baseUrl, apiKeySealed };
  }
  const provider = input.embedding_provider ?? 'local';
  const { model, dimension } = checkEmbeddingChoice(deps.registry, {
    provider, model: input.embedding_model, dimension: input.dimension, baseUrl: input.embedding_base_url, hasApiKey: ownKey !== null,
  }, COLLECTION_FIELD_NAMES);
  return { presetId: null, provider, model, dimension, baseUrl: input.embedding_base_url ?? null, apiKeySealed: ownKey };
}
