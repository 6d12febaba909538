import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createServices, type AppServices } from '../../src/services.js';
import pino from 'pino';

export type Backend = 'pglite' | 'postgresql';

/** PGlite always; PostgreSQL too when TEST_DATABASE_URL is set (as .ci/run does). */
export function testBackends(): Backend[] {
  return process.env.TEST_DATABASE_URL ? ['pglite', 'postgresql'] : ['pglite'];
}

export interface TestApp {
  app: App;
  services: AppServices;
  backend: Backend;
  close(): Promise<void>;
}

/** A throwaway database on the PostgreSQL server of TEST_DATABASE_URL, dropped on close. */
async function createScratchDatabase(baseUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `rs_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** Builds the app exactly as production does, on a fresh database of the given backend. */
export async function buildTestApp(backend: Backend = 'pglite', overrides: Partial<Config> = {}): Promise<TestApp> {
  const scratch = backend === 'postgresql' ? await createScratchDatabase(process.env.TEST_DATABASE_URL!) : undefined;
  const config: Config = { ...loadConfig({}), dataDir: '/nonexistent', ...overrides, databaseUrl: scratch?.url };
  const db = await openDatabase({ databaseUrl: scratch?.url });
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const services = await createServices(config, db, logger);
  const app = await buildApp({ services, logger });
  await app.ready();
  return {
    app,
    services,
    backend,
    async close() {
      await app.close();
      await services.stop();
      await db.close();
      await scratch?.drop();
    },
  };
}

export const ADMIN = { email: 'admin@example.com', password: 'correct horse battery' };

/** Runs first-run setup and returns the session cookie header value (`name=value`). */
export async function setupAdmin(app: App): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/v1/auth/setup', payload: ADMIN });
  if (response.statusCode !== 201) throw new Error(`setup failed: ${response.statusCode} ${response.body}`);
  return sessionCookieOf(response);
}

export function sessionCookieOf(response: { cookies: Array<{ name: string; value: string }> }): string {
  const cookie = response.cookies.find((c) => c.name === 'svc_session');
  if (!cookie) throw new Error('no session cookie in the response');
  return `${cookie.name}=${cookie.value}`;
}

/** Mints an API key through the admin API and returns its plaintext and record. */
export async function createApiKey(app: App, cookie: string, body: Record<string, unknown> = { name: 'test key' }) {
  const response = await app.inject({ method: 'POST', url: '/v1/admin/api-keys', headers: { cookie }, payload: body });
  if (response.statusCode !== 201) throw new Error(`key creation failed: ${response.statusCode} ${response.body}`);
  const record = response.json() as { id: string; key: string; prefix: string; scopes: string[] };
  return record;
}

export function bearer(key: string) {
  return { authorization: `Bearer ${key}` };
}
