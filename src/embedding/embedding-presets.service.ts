import { randomUUID } from 'node:crypto';
import type { CollectionDirectory } from '../collections/collection-directory.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { BadRequestError, ConflictError, NotFoundError, ProviderError } from '../errors.js';
import type { EmbeddingModels } from '../ingestion/embedding-models.js';
import type { PluginRegistry } from '../plugin-registry.js';
import type { SqlRunner } from '../plugins.js';
import { assertSelfHostedBaseUrl, checkEmbeddingChoice, HOSTED_EMBEDDING_PROVIDERS } from './embedding-choice.js';

export interface EmbeddingPresetRecord {
  id: string;
  name: string;
  provider: string;
  model: string;
  baseUrl: string | null;
  apiKeySealed: string | null;
  dimension: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface EmbeddingPresetInput {
  name?: string | undefined;
  provider?: string | undefined;
  model?: string | undefined;
  /** Write-only; `null` clears the stored key. */
  api_key?: string | null | undefined;
  base_url?: string | null | undefined;
  dimension?: number | undefined;
}

export interface ConnectionSettings {
  provider: string;
  model?: string | undefined;
  apiKey?: string | undefined;
  baseUrl?: string | undefined;
  dimension?: number | undefined;
}

interface PresetRow {
  id: string; name: string; provider: string; model: string; base_url: string | null; api_key_sealed: string | null;
  dimension: number; created_at: string | Date; updated_at: string | Date;
}

const PRESET_FIELD_NAMES = { model: 'model', baseUrl: 'base_url', apiKey: 'api_key' };
const TEST_TEXT = 'retrieval-service connection test';

function fromRow(row: PresetRow): EmbeddingPresetRecord {
  return {
    id: row.id, name: row.name, provider: row.provider, model: row.model, baseUrl: row.base_url, apiKeySealed: row.api_key_sealed,
    dimension: Number(row.dimension), createdAt: new Date(row.created_at), updatedAt: new Date(row.updated_at),
  };
}

/** Keys are never returned: `has_api_key` says whether one is stored (api-contract 2). */
export function serializePreset(preset: EmbeddingPresetRecord) {
  return {
    id: preset.id, name: preset.name, provider: preset.provider, model: preset.model, base_url: preset.baseUrl,
    dimension: preset.dimension, has_api_key: preset.apiKeySealed !== null,
    created_at: preset.createdAt.toISOString(), updated_at: preset.updatedAt.toISOString(),
  };
}

/**
 * Embedding presets (spec 2.11): a named provider, model, dimension, base URL and key that
 * collections are created from. Checked like a collection's own settings; keys sealed with MASTER_KEY.
 */
export class EmbeddingPresetService {
  constructor(
    private readonly sql: SqlRunner,
    private readonly secrets: SecretBox,
    private readonly registry: PluginRegistry,
    private readonly models: EmbeddingModels,
    private readonly collections: CollectionDirectory,
  ) {}

  async list(limit: number, offset: number): Promise<{ data: EmbeddingPresetRecord[]; total: number }> {
    const rows = await this.sql<PresetRow>('select * from embedding_presets order by name limit ? offset ?', [limit, offset]);
    const [count] = await this.sql<{ total: string | number }>('select count(*) as total from embedding_presets');
    return { data: rows.map(fromRow), total: Number(count?.total ?? 0) };
  }

  async find(id: string): Promise<EmbeddingPresetRecord | null> {
    const [row] = await this.sql<PresetRow>('select * from embedding_presets where id = ?', [id]);
    return row ? fromRow(row) : null;
  }

  async get(id: string): Promise<EmbeddingPresetRecord> {
    const preset = await this.find(id);
    if (!preset) throw new NotFoundError(`Embedding preset ${id} not found`);
    return preset;
  }

  async create(input: EmbeddingPresetInput & { name: string; provider: string }): Promise<EmbeddingPresetRecord> {
    const apiKeySealed = this.sealOrNull(input.api_key);
    const { model, dimension } = checkEmbeddingChoice(this.registry, {
      provider: input.provider, model: input.model, dimension: input.dimension, baseUrl: input.base_url, hasApiKey: apiKeySealed !== null,
    }, PRESET_FIELD_NAMES);
    const rows = await this.write(
      `insert into embedding_presets (id, name, provider, model, base_url, api_key_sealed, dimension, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, now(), now()) returning *`,
      [randomUUID(), input.name, input.provider, model, input.base_url ?? null, apiKeySealed, dimension],
      input.name,
    );
    return fromRow(rows[0]!);
  }

  async update(id: string, input: EmbeddingPresetInput): Promise<EmbeddingPresetRecord> {
    const current = await this.get(id);
    const provider = input.provider ?? current.provider;
    // A new provider starts from its own defaults rather than the old provider's model, as create does.
    const providerChanged = provider !== current.provider;
    const { apiKeySealed, baseUrl } = providerChanged ? this.newProviderConnection(current, provider, input) : this.sameProviderConnection(current, input);
    const { model, dimension } = checkEmbeddingChoice(this.registry, {
      provider,
      model: input.model ?? (providerChanged ? undefined : current.model),
      dimension: input.dimension ?? (providerChanged || input.model !== undefined ? undefined : current.dimension),
      baseUrl,
      // A preset may hold no key (a null api_key clears it; its collections then bring their own),
      // so an update asks for one only with a new provider: it asked on every update of a cleared
      // preset, a rename included, which could then not be made.
      hasApiKey: providerChanged ? apiKeySealed !== null : undefined,
    }, PRESET_FIELD_NAMES);
    const name = input.name ?? current.name;
    const rows = await this.write(
      `update embedding_presets set name = ?, provider = ?, model = ?, base_url = ?, api_key_sealed = ?, dimension = ?, updated_at = now()
       where id = ? returning *`,
      [name, provider, model, baseUrl, apiKeySealed, dimension, id],
      name,
    );
    if (!rows[0]) throw new NotFoundError(`Embedding preset ${id} not found`);
    return fromRow(rows[0]);
  }

  /**
   * Collections made from the preset keep working: they copied its settings and key when created.
   * Their reference to it is cleared, since it would name a preset that no longer exists.
   */
  async delete(id: string): Promise<void> {
    const rows = await this.sql<{ collection_id: string | null }>(
      `with deleted as (delete from embedding_presets where id = ? returning id),
         cleared as (update collections set embedding_preset_id = null, updated_at = now()
           where embedding_preset_id in (select id from deleted) returning id)
       select cleared.id as collection_id from deleted left join cleared on true`,
      [id],
    );
    if (rows.length === 0) throw new NotFoundError(`Embedding preset ${id} not found`);
    for (const row of rows) if (row.collection_id) this.collections.forget(row.collection_id);
  }

  /**
   * The same provider keeps its stored key and base URL unless the request replaces or clears them.
   * A new base URL does not take the stored key along: keys are write-only, and pointing a preset at
   * another host would otherwise hand that host the key.
   */
  private sameProviderConnection(current: EmbeddingPresetRecord, input: EmbeddingPresetInput) {
    const hostChanged = input.base_url !== undefined && input.base_url !== current.baseUrl;
    if (hostChanged && current.apiKeySealed !== null && input.api_key === undefined) {
      throw new BadRequestError(`${PRESET_FIELD_NAMES.apiKey} is required with a new ${PRESET_FIELD_NAMES.baseUrl}: the stored key is never sent to another host (send the key again, or null to clear it)`);
    }
    return {
      apiKeySealed: input.api_key === undefined ? current.apiKeySealed : this.sealOrNull(input.api_key),
      baseUrl: input.base_url === undefined ? current.baseUrl : input.base_url,
    };
  }

  /**
   * A new provider gets only the key and base URL sent with it, as at create: the old ones were kept,
   * so `{"provider": "voyage"}` sent the stored OpenAI key, in a Voyage-shaped body, to the old base URL.
   */
  private newProviderConnection(current: EmbeddingPresetRecord, provider: string, input: EmbeddingPresetInput) {
    const apiKeySealed = this.sealOrNull(input.api_key);
    if (apiKeySealed === null && HOSTED_EMBEDDING_PROVIDERS.includes(provider)) {
      throw new BadRequestError(`${PRESET_FIELD_NAMES.apiKey} is required for provider ${provider}: a key is never carried from ${current.provider} to another provider`);
    }
    return { apiKeySealed, baseUrl: input.base_url ?? null };
  }

  private sealOrNull(apiKey: string | null | undefined): string | null {
    return apiKey ? this.secrets.seal(apiKey) : null;
  }

  private async write(query: string, params: unknown[], name: string): Promise<PresetRow[]> {
    try {
      return await this.sql<PresetRow>(query, params);
    } catch (error) {
      if ((error as { code?: string }).code === '23505' || /unique|duplicate key/i.test((error as Error).message)) {
        throw new ConflictError(`An embedding preset named ${name} already exists`);
      }
      throw error;
    }
  }

  /** A real round trip to the provider with a saved preset's settings and key. */
  async testSaved(id: string) {
    const preset = await this.get(id);
    return this.test({
      provider: preset.provider, model: preset.model, dimension: preset.dimension, baseUrl: preset.baseUrl ?? undefined,
      apiKey: preset.apiKeySealed ? this.secrets.open(preset.apiKeySealed) : undefined,
    });
  }

  /**
   * Embeds one short text with the given settings. A provider failure is an answer (`ok: false`
   * with the provider's message), not an error of this request; settings that cannot form a model
   * at all (no base URL for a self-hosted server...) are a 400.
   */
  async test(settings: ConnectionSettings) {
    // The model would name the collection's field, embedding_base_url, which this request does not have.
    assertSelfHostedBaseUrl(settings.provider, settings.baseUrl, PRESET_FIELD_NAMES);
    const model = this.models.create(settings.provider, {
      model: settings.model, dimension: settings.dimension, apiKey: settings.apiKey, baseUrl: settings.baseUrl, anyDimension: true,
    });
    const started = performance.now();
    const elapsed = () => Math.round((performance.now() - started) * 100) / 100;
    try {
      const result = await model.embed([TEST_TEXT], 'document');
      return { ok: true, provider: settings.provider, model: model.model, dimension: result.vectors[0]!.length, tokens: result.tokens, latency_ms: elapsed() };
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      return { ok: false, provider: settings.provider, model: model.model, error: error.message, latency_ms: elapsed() };
    }
  }
}
