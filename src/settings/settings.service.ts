import type { EntityManager } from '@mikro-orm/postgresql';
import { ConfigError } from '../config.js';
import { Setting } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';
import {
  SETTING_DEFINITIONS, SETTINGS_BY_KEY, settingFromEnvironment, settingValueError, type SettingValue,
} from './setting-definitions.js';

/** Where a setting's value comes from: saved by an admin, set by the environment, or the default. */
export const SETTING_SOURCES = ['database', 'environment', 'default'] as const;
export type SettingSource = typeof SETTING_SOURCES[number];

export interface SettingView {
  key: string;
  value: SettingValue;
  default: SettingValue;
  source: SettingSource;
  description: string;
}

/**
 * Instance settings: defaults, overridden by environment, overridden by what an admin saved.
 * Values are kept in memory and re-read from the database at most every `refreshMs`, so that
 * replicas pick up a change made through another one without a query per request.
 */
export class SettingsService {
  private stored = new Map<string, SettingValue>();
  private loadedAt = 0;
  /** Read once: the environment does not change while the process runs, and reading it is slow. */
  private readonly environment: Map<string, SettingValue>;

  constructor(
    private readonly fork: () => EntityManager,
    env: NodeJS.ProcessEnv = process.env,
    private readonly refreshMs = 5000,
  ) {
    this.environment = new Map(SETTING_DEFINITIONS.flatMap((definition) => {
      const value = settingFromEnvironment(definition, env);
      return value === undefined ? [] : [[definition.key, value] as const];
    }));
    // Before the database is read: the variables against each other and the defaults, which a reset
    // of saved values goes back to.
    this.assertChunkPairFromEnvironment();
  }

  async load(): Promise<void> {
    const rows = await this.fork().find(Setting, {});
    this.stored = new Map(rows.map((row) => [row.key, row.value as SettingValue]));
    // The first load is the start's (services.ts): the variables are checked against what is saved.
    if (this.loadedAt === 0) this.assertChunkPairFromEnvironment();
    this.loadedAt = Date.now();
  }

  /**
   * A default chunk pair with a side from the environment that cannot work stops the start: every
   * create that sets no chunk size would otherwise fail (400) for fields its caller never sent.
   * A pair saved whole by an admin was checked when saved, and has no variable to change.
   */
  private assertChunkPairFromEnvironment(): void {
    const size = this.resolve('default_chunk_size');
    const overlap = this.resolve('default_chunk_overlap');
    if (size.source !== 'environment' && overlap.source !== 'environment') return;
    if (chunkPairFits(size.value, overlap.value)) return;
    const saved = size.source === 'database' || overlap.source === 'database';
    throw new ConfigError(`${startingValue(overlap)} must be smaller than ${startingValue(size)}${saved
      ? ': set the variable to a value that fits, or start without it and change the saved setting first' : ''}`);
  }

  private async fresh(): Promise<void> {
    if (Date.now() - this.loadedAt > this.refreshMs) await this.load();
  }

  private resolve(key: string): SettingView {
    const definition = SETTINGS_BY_KEY.get(key);
    if (!definition) throw new BadRequestError(`Unknown setting: ${key}`);
    const stored = this.stored.get(key);
    if (stored !== undefined) return { ...base(), value: stored, source: 'database' };
    const fromEnvironment = this.environment.get(key);
    if (fromEnvironment !== undefined) return { ...base(), value: fromEnvironment, source: 'environment' };
    return { ...base(), value: definition.default, source: 'default' };

    function base() {
      return { key, default: definition!.default, description: definition!.description };
    }
  }

  async get<T extends SettingValue>(key: string): Promise<T> {
    await this.fresh();
    return this.resolve(key).value as T;
  }

  async list(): Promise<SettingView[]> {
    await this.fresh();
    return SETTING_DEFINITIONS.map((definition) => this.resolve(definition.key));
  }

  /** Returns one message per bad value; an empty list means every value would be accepted. */
  validate(values: Record<string, unknown>): string[] {
    const errors: string[] = [];
    for (const [key, value] of Object.entries(values)) {
      const definition = SETTINGS_BY_KEY.get(key);
      const error = definition ? settingValueError(definition, value) : `Unknown setting: ${key}`;
      if (error) errors.push(error);
    }
    if (errors.length === 0 && ('default_chunk_size' in values || 'default_chunk_overlap' in values)) {
      const size = values.default_chunk_size ?? this.resolve('default_chunk_size').value;
      const overlap = values.default_chunk_overlap ?? this.resolve('default_chunk_overlap').value;
      if (!chunkPairFits(size, overlap)) errors.push(`default_chunk_overlap (${overlap}) must be smaller than default_chunk_size (${size})`);
    }
    return errors;
  }

  async update(em: EntityManager, values: Record<string, unknown>): Promise<SettingView[]> {
    const errors = this.validate(values);
    if (errors.length > 0) throw new BadRequestError(errors.join('; '), { errors });
    const now = new Date();
    for (const [key, value] of Object.entries(values)) {
      await em.upsert(Setting, { key, value, updatedAt: now });
    }
    await em.flush();
    await this.load();
    return this.list();
  }

  async reset(em: EntityManager, keys: string[]): Promise<SettingView[]> {
    const unknown = keys.filter((key) => !SETTINGS_BY_KEY.has(key));
    if (unknown.length > 0) throw new BadRequestError(`Unknown setting: ${unknown.join(', ')}`);
    await this.fresh();
    // What a key resets to: the environment's value, else the default.
    const afterReset = (key: string) => (keys.includes(key) ? this.environment.get(key) ?? SETTINGS_BY_KEY.get(key)!.default : this.resolve(key).value);
    const size = afterReset('default_chunk_size');
    const overlap = afterReset('default_chunk_overlap');
    if (!chunkPairFits(size, overlap)) {
      throw new BadRequestError(`Resetting ${keys.join(', ')} would leave default_chunk_overlap (${overlap}) not smaller than default_chunk_size (${size}): reset both, or change the other first`);
    }
    await em.nativeDelete(Setting, { key: { $in: keys } });
    await this.load();
    return this.list();
  }
}

/**
 * The default chunk overlap must stay below the default chunk size, as a collection's own pair
 * must (collections.service.ts): new collections would otherwise be created with another overlap
 * than the one saved.
 */
function chunkPairFits(size: unknown, overlap: unknown): boolean {
  return typeof size !== 'number' || typeof overlap !== 'number' || overlap < size;
}

/** How a start error names a value: by its variable, unless it is saved (which wins over the variable). */
function startingValue(setting: SettingView): string {
  const variable = setting.key.toUpperCase();
  switch (setting.source) {
    case 'environment': return `${variable} (${setting.value})`;
    case 'default': return `${variable} (unset: the default, ${setting.value})`;
    case 'database': return `${setting.key} (${setting.value}, saved by an admin, which wins over ${variable})`;
  }
}
