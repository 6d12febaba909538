import type { FastifyBaseLogger } from 'fastify';
import { ApiKeyUsageTracker } from './auth/api-key-usage-tracker.js';
import { ApiKeyService } from './auth/api-keys.service.js';
import type { Config } from './config.js';
import { SecretBox } from './crypto/secret-box.js';
import type { Database } from './db/database.js';
import { SettingsService } from './settings/settings.service.js';

/**
 * The long-lived parts every route and worker shares. Built once per process by `createServices`
 * and handed to the Fastify app, the workers and the operator alike.
 */
export interface AppServices {
  config: Config;
  db: Database;
  secrets: SecretBox;
  settings: SettingsService;
  apiKeys: ApiKeyService;
  apiKeyUsage: ApiKeyUsageTracker;
  /** Stops background work and flushes what is buffered; does not close the database. */
  stop(): Promise<void>;
}

export async function createServices(config: Config, db: Database, logger: FastifyBaseLogger): Promise<AppServices> {
  const secrets = new SecretBox(config.masterKey);
  if (!secrets.encrypts) logger.warn('MASTER_KEY is not set: stored secrets (API keys of providers, passwords of sources) are not encrypted at rest');
  const settings = new SettingsService(db.fork);
  await settings.load();
  const apiKeyUsage = new ApiKeyUsageTracker(db.fork, 1000, (error) => logger.error({ err: error }, 'could not record API key use'));
  apiKeyUsage.start();
  const apiKeys = new ApiKeyService(apiKeyUsage, config.apiKeyCacheMs);
  return {
    config, db, secrets, settings, apiKeys, apiKeyUsage,
    async stop() {
      await apiKeyUsage.stop();
    },
  };
}
