import { ConfigError } from '../config.js';
export type SettingValue = string | number | boolean;

export interface SettingDefinition {
  key: string;
  type: 'string' | 'integer' | 'boolean';
  default: SettingValue;
  description: string;
  /** Allowed values for strings with a closed set, or [min, max] for integers. */
  allowed?: readonly string[];
  range?: readonly [number, number];
  /** Strings must match this, e.g. an RFC 6265 cookie-name token. */
  pattern?: RegExp;
}

/** Instance settings (api-contract 3). Each may be set by environment (upper-case key) or by an admin. */
export const SETTING_DEFINITIONS: readonly SettingDefinition[] = [
  { key: 'allow_local_webhooks', type: 'boolean', default: false, description: 'Allow webhook URLs that are loopback HTTP' },
  { key: 'webhook_timeout_ms', type: 'integer', default: 10000, range: [100, 120000], description: 'Timeout of one webhook delivery attempt' },
  // A name outside the RFC 6265 token set would make every login fail, locking admins out.
  { key: 'session_cookie_name', type: 'string', default: 'svc_session', pattern: /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/, description: 'Name of the admin session cookie' },
  { key: 'session_cookie_secure', type: 'boolean', default: false, description: 'Set the Secure flag on the session cookie (serve over HTTPS)' },
  { key: 'session_cookie_samesite', type: 'string', default: 'lax', allowed: ['lax', 'strict', 'none'], description: 'SameSite attribute of the session cookie' },
  { key: 'session_ttl_hours', type: 'integer', default: 168, range: [1, 8760], description: 'Lifetime of an admin session' },
  { key: 'query_cache_ttl_s', type: 'integer', default: 60, range: [0, 86400], description: 'How long query results are cached (0 disables the cache)' },
  { key: 'embedding_cache_enabled', type: 'boolean', default: true, description: 'Reuse embeddings of texts already embedded with the same model' },
  { key: 'default_chunk_size', type: 'integer', default: 800, range: [50, 100000], description: 'Chunk size (characters) for new collections that do not set one' },
  { key: 'default_chunk_overlap', type: 'integer', default: 100, range: [0, 50000], description: 'Chunk overlap (characters) for new collections that do not set one' },
];

export const SETTINGS_BY_KEY = new Map(SETTING_DEFINITIONS.map((definition) => [definition.key, definition]));

/** Returns an error message, or null when `value` is acceptable for the setting. */
export function settingValueError(definition: SettingDefinition, value: unknown): string | null {
  switch (definition.type) {
    case 'boolean':
      return typeof value === 'boolean' ? null : `${definition.key} must be a boolean`;
    case 'integer': {
      if (typeof value !== 'number' || !Number.isInteger(value)) return `${definition.key} must be an integer`;
      const [min, max] = definition.range ?? [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
      return value < min || value > max ? `${definition.key} must be between ${min} and ${max}` : null;
    }
    case 'string':
      if (typeof value !== 'string' || value.length === 0) return `${definition.key} must be a non-empty string`;
      if (definition.allowed && !definition.allowed.includes(value)) {
        return `${definition.key} must be one of ${definition.allowed.join(', ')}`;
      }
      if (definition.pattern && !definition.pattern.test(value)) return `${definition.key} has characters that are not allowed`;
      return null;
  }
}

const BOOLEAN_WORDS = new Map([['true', true], ['1', true], ['false', false], ['0', false]]);

/**
 * Reads a setting from the environment (`SESSION_COOKIE_SECURE=true`): undefined when unset, a
 * ConfigError when set to a value the setting does not take, so a typo stops the start instead of
 * being silently replaced by the default.
 */
export function settingFromEnvironment(definition: SettingDefinition, env: NodeJS.ProcessEnv): SettingValue | undefined {
  const name = definition.key.toUpperCase();
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let value: SettingValue | undefined = raw;
  if (definition.type === 'boolean') value = BOOLEAN_WORDS.get(raw.trim().toLowerCase());
  if (definition.type === 'integer') value = /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : undefined;
  const error = value === undefined ? `${definition.key} must be ${definition.type === 'boolean' ? 'true or false' : 'an integer'}` : settingValueError(definition, value);
  if (error) throw new ConfigError(`${name}: ${error}, got "${raw}"`);
  return value;
}
