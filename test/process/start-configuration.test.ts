/**
 * A variable the service cannot run with stops the start before anything is opened, naming the
 * variable and what it takes. PORT=70000 failed only after the database was opened and migrated,
 * LOG_LEVEL=loud with pino's "default level:loud must be included in custom levels", and a
 * DATABASE_URL without a database name with MikroORM's words for it.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { freePort } from '../support/free-port.js';
import { spawnServer } from '../support/server-process.js';

function refusalOf(env: Record<string, string>): unknown {
  try {
    loadConfig(env);
    return undefined;
  } catch (error) {
    return error;
  }
}

t.test('loadConfig refuses, naming the variable', async (t) => {
  const refused: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: '70000' }, /^PORT must be an integer from 0 to 65535, got "70000"$/],
    [{ PORT: '-1' }, /^PORT must be an integer from 0 to 65535/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"$/],
    [{ DATABASE_URL: 'garbage' }, /^DATABASE_URL must be a PostgreSQL URL naming a database/],
    [{ DATABASE_URL: 'postgresql://user:hunter2@127.0.0.1:5432' }, /^DATABASE_URL must be a PostgreSQL URL naming a database/],
    [{ DATABASE_URL: 'mysql://127.0.0.1/app' }, /^DATABASE_URL must be a PostgreSQL URL/],
    [{ INDEX_WARM_UP: 'yes' }, /^INDEX_WARM_UP must be "true" or "false", got "yes"$/],
    [{ PROVIDER_QUERY_TIMEOUT_MS: '0' }, /^PROVIDER_QUERY_TIMEOUT_MS must be an integer/],
    [{ PROVIDER_OUTAGE_WAIT_S: 'an hour' }, /^PROVIDER_OUTAGE_WAIT_S must be an integer/],
    [{ MIN_FREE_DISK_MB: '1GB' }, /^MIN_FREE_DISK_MB must be an integer/],
    [{ EMBEDDED_CHECKPOINT_WAL_MB: '-1' }, /^EMBEDDED_CHECKPOINT_WAL_MB must be an integer/],
    [{ EMBEDDED_VACUUM_INTERVAL_S: '1m' }, /^EMBEDDED_VACUUM_INTERVAL_S must be an integer/],
    [{ QUERY_EVENTS_RETENTION_DAYS: '-1' }, /^QUERY_EVENTS_RETENTION_DAYS must be an integer from 0 to 36500, got "-1"$/],
    [{ QUERY_EVENTS_RETENTION_DAYS: '30d' }, /^QUERY_EVENTS_RETENTION_DAYS must be an integer/],
    [{ EMBEDDING_CACHE_MAX_MB: '1GB' }, /^EMBEDDING_CACHE_MAX_MB must be an integer >= 0, got "1GB"$/],
    [{ UPLOAD_SESSION_EXPIRY_HOURS: '1.5' }, /^UPLOAD_SESSION_EXPIRY_HOURS must be an integer >= 0, got "1.5"$/],
    [{ CORS_ORIGINS: 'localhost:5173' }, /^CORS_ORIGINS must be "\*" or origins separated by commas, each scheme:\/\/host\[:port\] such as https:\/\/app.example.com, got "localhost:5173"$/],
    [{ CORS_ORIGINS: 'https://app.example.com/chat' }, /^CORS_ORIGINS must be .+, got "https:\/\/app.example.com\/chat"$/],
    [{ CORS_ORIGINS: 'http://localhost:5173, *' }, /^CORS_ORIGINS must be .+, got "\*"$/],
  ];
  for (const [env, message] of refused) {
    t.throws(() => loadConfig(env), message, JSON.stringify(env));
    t.ok(refusalOf(env) instanceof ConfigError, `${JSON.stringify(env)}: a ConfigError, which main.ts reports as such`);
  }
  t.notMatch(String(refusalOf({ DATABASE_URL: 'postgresql://user:hunter2@127.0.0.1:5432' })), 'hunter2', 'the URL, which may hold a password, is not repeated');
  t.match(loadConfig({ PORT: '0', LOG_LEVEL: 'silent', DATABASE_URL: 'postgres://u@db.internal/app' }), { port: 0, logLevel: 'silent', databaseUrl: 'postgres://u@db.internal/app' });
  t.match(loadConfig({}), { warmUpIndexes: true }, 'INDEX_WARM_UP is on by default');
  t.match(loadConfig({ INDEX_WARM_UP: 'false' }), { warmUpIndexes: false });
  t.match(loadConfig({}), { providerQueryTimeoutMs: 10_000, providerOutageWaitMs: 3_600_000 }, 'a query waits 10 s for its provider, a document an hour');
  t.match(loadConfig({ PROVIDER_QUERY_TIMEOUT_MS: '2500', PROVIDER_OUTAGE_WAIT_S: '0' }), { providerQueryTimeoutMs: 2500, providerOutageWaitMs: 0 });
  t.match(loadConfig({}), { minFreeDiskBytes: 1024 * 1024 * 1024 }, 'writes stop with a gigabyte left: the embedded database\'s log may take that between checkpoints');
  t.match(loadConfig({ MIN_FREE_DISK_MB: '0' }), { minFreeDiskBytes: 0 });
  t.match(loadConfig({}), { embeddedCheckpointWalBytes: 64 * 1024 * 1024 }, 'the embedded database is checkpointed every 64 MB of log');
  t.match(loadConfig({ EMBEDDED_CHECKPOINT_WAL_MB: '0' }), { embeddedCheckpointWalBytes: 0 });
  t.match(loadConfig({}), { embeddedVacuumIntervalMs: 60_000 }, 'the embedded database is vacuumed every minute');
  t.match(loadConfig({ EMBEDDED_VACUUM_INTERVAL_S: '0' }), { embeddedVacuumIntervalMs: 0 });
  t.match(loadConfig({}), { postgresUpkeepIntervalMs: 60_000 }, 'PostgreSQL tables autovacuum leaves alone are looked at every minute');
  t.match(loadConfig({ POSTGRES_UPKEEP_INTERVAL_S: '0' }), { postgresUpkeepIntervalMs: 0 });
  t.match(loadConfig({}), { keywordPackIntervalMs: 30_000 }, 'the SQL keyword index packs changed terms every 30 s');
  t.match(loadConfig({ KEYWORD_PACK_INTERVAL_S: '0' }), { keywordPackIntervalMs: 0 });
  t.match(loadConfig({}), { queryEventsRetentionDays: 30 }, 'query events are kept 30 days, the analytics\' default window');
  t.match(loadConfig({ QUERY_EVENTS_RETENTION_DAYS: '0' }), { queryEventsRetentionDays: 0 });
  t.match(loadConfig({}), { embeddingCacheMaxBytes: 1024 * 1024 * 1024 }, 'the embedding cache keeps at most a gigabyte of vectors');
  t.match(loadConfig({ EMBEDDING_CACHE_MAX_MB: '0' }), { embeddingCacheMaxBytes: 0 });
  t.match(loadConfig({}), { uploadSessionExpiryMs: 24 * 3_600_000 }, 'an idle open upload session expires after a day');
  t.match(loadConfig({ UPLOAD_SESSION_EXPIRY_HOURS: '0' }), { uploadSessionExpiryMs: 0 });
  t.same(loadConfig({}).corsOrigins, [], 'no origin may call from a browser unless listed');
  t.same(loadConfig({ CORS_ORIGINS: ' HTTPS://App.Example.com:443/ , http://localhost:5173' }).corsOrigins, ['https://app.example.com', 'http://localhost:5173'], 'as a browser writes them in Origin');
  t.equal(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, '*');
});

/** Starts the service with `env` over the test's environment and waits for it to exit. */
async function failedStart(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const { child, output } = spawnServer(env);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output: output() };
}

const STACK_FRAME = /\n\s+at /;

t.test('the process exits at once with the message, before creating its data directory', async (t) => {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'rs-config-'));
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  const { code, output } = await failedStart({ PORT: '70000', DATA_DIR: path.join(parent, 'data'), DATABASE_URL: '' });
  t.not(code, 0, 'a non-zero exit');
  t.match(output, /PORT must be an integer from 0 to 65535, got "70000"/);
  t.notMatch(output, STACK_FRAME, 'the message alone, without a stack trace');
  t.same(await readdir(parent), [], 'no database was opened');
});

t.test('a PostgreSQL that cannot be reached stops the start with one line naming where DATABASE_URL points', async (t) => {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'rs-config-'));
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  const port = await freePort();
  const { code, output } = await failedStart({ DATABASE_URL: `postgresql://app:hunter2@127.0.0.1:${port}/retrieval`, DATA_DIR: path.join(parent, 'data') });
  t.equal(code, 1);
  t.match(output, `failed to start: DatabaseUnavailableError: could not open PostgreSQL at 127.0.0.1:${port}, database retrieval (DATABASE_URL): connect ECONNREFUSED`);
  t.notMatch(output, STACK_FRAME, 'without a stack trace');
  t.notMatch(output, 'hunter2', 'nor the password');
});

if (process.env.TEST_DATABASE_URL) {
  t.test('a login PostgreSQL refuses stops the start with its reason', async (t) => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'rs-config-'));
    t.teardown(() => rm(parent, { recursive: true, force: true }));
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.username = 'no_such_role_for_the_service';
    url.password = 'hunter2';
    const { code, output } = await failedStart({ DATABASE_URL: url.toString(), DATA_DIR: path.join(parent, 'data') });
    t.equal(code, 1);
    t.match(output, /could not open PostgreSQL at .+ \(DATABASE_URL\): role "no_such_role_for_the_service" does not exist/);
    t.notMatch(output, STACK_FRAME);
    t.notMatch(output, 'hunter2');
  });
}
