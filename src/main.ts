import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { buildApp } from './app.js';
import { needsSetup } from './auth/users.service.js';
import { loadConfig } from './config.js';
import { openDatabase } from './db/database.js';
import { stopGracefully } from './graceful-stop.js';
import { createLogger } from './logger.js';
import { createServices } from './services.js';

/**
 * `serve` (default): the API. Later commands (`worker`, `operator`, `migrate`) share this entry.
 */
async function serve(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.databaseUrl ? undefined : path.join(config.dataDir, 'db'),
    logger,
  });
  logger.info({ database: db.kind, dataDir: config.dataDir }, 'database ready, migrations applied');
  const services = await createServices(config, db, logger);
  const app = await buildApp({ services, logger });
  await services.start();

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    const forced = setTimeout(() => {
      logger.error('shutdown took longer than 25 s; exiting');
      process.exit(1);
    }, 25_000);
    forced.unref();
    process.exit(await stopGracefully({ http: app, services, database: db }, logger));
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  // Where a newcomer goes next, in words: Fastify's own lines give only the addresses.
  const host = ['0.0.0.0', '::'].includes(config.host) ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host;
  const origin = `http://${host}:${(app.server.address() as AddressInfo).port}`;
  logger.info({ docs: `${origin}/docs` }, `API documentation: ${origin}/docs`);
  // A database that does not answer now is the requests' business (503), not a reason to stop serving.
  if (await needsSetup(db.fork()).catch(() => false)) {
    logger.info(`no admin exists yet: create the first with POST ${origin}/v1/auth/setup, body {email, password} (README: First admin and first API key)`);
  }
}

const command = process.argv[2] ?? 'serve';
if (command === 'serve') {
  serve().catch((error: unknown) => {
    process.stderr.write(`retrieval-service failed to start: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    process.exit(1);
  });
} else {
  process.stderr.write(`unknown command "${command}"; expected: serve\n`);
  process.exit(2);
}
