import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createServices } from '../../src/services.js';
import { resetPostgresDatabase } from '../search/harness.js';
import { bootstrapAdmin, freePort } from './service-process.js';

/**
 * The service built in the benchmark's process, as src/main.ts builds it, listening on a free port
 * with an admin's API key, so a benchmark can reach its services directly as well as through the
 * API. `DATABASE_URL` names a PostgreSQL database, which is dropped and recreated; else the embedded
 * database in a temporary directory named after `name`, removed by `close`, which stops the service
 * as a shutdown does (buffered writes such as API key use go out before the database closes).
 */
export async function serviceInProcess(name: string) {
  const databaseUrl = process.env.DATABASE_URL;
  const temporary = databaseUrl ? undefined : await mkdtemp(path.join(os.tmpdir(), `rs-${name}-`));
  if (databaseUrl) await resetPostgresDatabase(databaseUrl);
  process.env.DATA_DIR = temporary ?? process.env.DATA_DIR ?? path.join(os.tmpdir(), `rs-${name}-files`);
  const db = await openDatabase(databaseUrl ? { databaseUrl } : { dataDir: path.join(temporary!, 'db') });
  const services = await createServices(loadConfig(), db, pino({ level: 'warn' }));
  const app = await buildApp({ services });
  const port = await freePort();
  await app.listen({ port, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${port}`;
  const { key } = await bootstrapAdmin(baseUrl);
  return {
    services,
    baseUrl,
    key,
    async close() {
      await app.close();
      await services.stop();
      await db.close();
      if (temporary) await rm(temporary, { recursive: true, force: true });
    },
  };
}
