import path from 'node:path';
import { StartRefusal } from './errors.js';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** PostgreSQL URL; undefined selects the embedded PGlite database in `dataDir`. */
  databaseUrl: string | undefined;
  /** `embedded` (in-process ANN index persisted in PGlite), `pgvector` or `weaviate`. */
  vectorStore: 'embedded' | 'pgvector' | 'weaviate';
  /** `memory` (in-process BM25 rebuilt from the database) or `sql` (postings tables). */
  keywordIndex: 'memory' | 'sql';
  weaviateUrl: string | undefined;
  weaviateApiKey: string | undefined;
  masterKey: string | undefined;
  logLevel: string;
  /**
   * Origins whose pages may call the API from a browser (CORS): listed ones with API keys or the
   * session cookie, `*` any with API keys only; none by default, as before.
   */
  corsOrigins: string[] | '*';
  /** Largest JSON body accepted, in bytes. */
  bodyLimitBytes: number;
  /** Largest uploaded file accepted, in bytes. */
  uploadLimitBytes: number;
  /** Originals up to this size (and under the 64 KB an upload is judged by) are kept in the database rather than the file store; 0 keeps every one as a file. */
  originalsInDatabaseMaxBytes: number;
  /** Ingestion jobs processed at once by this process; 0 runs no in-process workers. */
  workerConcurrency: number;
  /**
   * Files at least this large are parsed on a thread of their own: starting one and loading the
   * parsers costs ~0.1-0.3 s, worth it where parsing takes as long.
   */
  parseOnThreadMinBytes: number;
  /** Heap of the thread a large file is parsed on; a file needing more fails. */
  parseMemoryLimitMb: number;
  /** Time a large file may take to parse on its thread; one taking longer fails. */
  parseTimeoutMs: number;
  /** How long an API key lookup may be answered from memory before the database is asked again. */
  apiKeyCacheMs: number;
  /** Argon2id's cost for passwords stored from now on; a login with a hash of another cost stores it again at this one. */
  passwordHashCost: PasswordHashCost;
  /** How long a collection looked up by name is served from memory (other replicas' changes show after it). */
  collectionCacheMs: number;
  /** How long a claimed ingestion job may go without a heartbeat before another worker takes it over. */
  jobLeaseMs: number;
  /** Estimated bytes of query answers kept by the query cache (2,000 answers at most). */
  queryCacheMaxBytes: number;
  /** HNSW candidate list of the embedded store's searches; undefined keeps the store's default. */
  hnswExpansionSearch: number | undefined;
  /** Timeout of one attempt of a call to an embedding or reranking provider. */
  providerTimeoutMs: number;
  /** Further attempts of a provider call after a 429, a 5xx, a timeout or a connection failure. */
  providerMaxRetries: number;
  /** Requests in flight to one collection's embedding or reranking provider. */
  providerConcurrency: number;
  /** The most a query's call to its embedding or reranking provider takes, retries and the wait for a free connection included. */
  providerQueryTimeoutMs: number;
  /** How long a document waits for an unavailable embedding provider before it fails; 0 counts each failure as an attempt. */
  providerOutageWaitMs: number;
  /** Free space DATA_DIR's disk must keep: below it uploads and vector upserts are refused (507) and ingestion waits; 0 turns the check off. */
  minFreeDiskBytes: number;
  /** The embedded database is checkpointed once its write-ahead log since the last checkpoint is this large; 0 leaves it to PGlite (max_wal_size 1GB). */
  embeddedCheckpointWalBytes: number;
  /** Between VACUUM rounds of the embedded database (PGlite has no autovacuum); 0 turns them off. */
  embeddedVacuumIntervalMs: number;
  /** On PostgreSQL, between rounds that vacuum and analyze the service's tables autovacuum leaves alone (see postgres-table-upkeep.ts); 0 turns them off. */
  postgresUpkeepIntervalMs: number;
  /** How often the SQL keyword index packs changed terms' postings (keyword-posting-packer.ts); 0: never. */
  keywordPackIntervalMs: number;
  /** Query events older than this many days are deleted (expired-records-sweep.ts); their daily totals are kept. 0: kept forever. */
  queryEventsRetentionDays: number;
  /** The embedding cache's oldest vectors are deleted beyond this many bytes (embedding-cache-bound.ts); 0: unbounded. */
  embeddingCacheMaxBytes: number;
  /** Open upload sessions given no file for this long are cancelled and their files removed (upload-session-expiry.ts); 0: never. */
  uploadSessionExpiryMs: number;
  /** On PostgreSQL, how many range indexes over chunk metadata a collection may get (metadata-range-indexes.ts); 0: none. */
  metadataRangeIndexesPerCollection: number;
  /** Where original files and element images are kept: `local` (DATA_DIR/files) or an S3-compatible bucket. */
  fileStore: 'local' | 's3';
  s3: S3StoreConfig;
  /**
   * Whether the in-process indexes (embedded vectors, memory keyword index) of every collection are
   * loaded in the background at start, most recently queried first, rather than by each
   * collection's first query after a restart.
   */
  warmUpIndexes: boolean;
  /** An `llm` plugin that reads images, used to caption image elements; unset: images are not captioned. */
  captionLlm: { plugin: string; model: string | undefined; apiKey: string | undefined; baseUrl: string | undefined } | undefined;
}

export interface PasswordHashCost {
  memoryKib: number;
  iterations: number;
  parallelism: number;
}

export interface S3StoreConfig {
  endpoint: string | undefined;
  bucket: string | undefined;
  region: string;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  /** Path-style URLs (`endpoint/bucket/key`), which MinIO, Ceph and most self-hosted stores need. */
  forcePathStyle: boolean;
  /** Prepended to every key, so one bucket can serve several installations. */
  prefix: string;
}

/** A variable the service cannot run with; the message names it and what it takes. */
export class ConfigError extends StartRefusal {}

/** The integer in `env[name]`, undefined when unset or empty. */
function optionalInteger(env: NodeJS.ProcessEnv, name: string, min = 0, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(`${name} must be an integer ${range}, got "${raw}"`);
  }
  return value;
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max?: number): number {
  return optionalInteger(env, name, min, max) ?? fallback;
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be "true" or "false", got "${raw}"`);
  return raw === 'true';
}

/**
 * Argon2id's cost: by default argon2's own (64 MiB, 3 passes, 4 lanes), about 0.1-0.3 s a login on
 * two cores. Small machines lower it, within OWASP's floor of 19 MiB and 2 passes, say.
 */
function passwordHashCostOf(env: NodeJS.ProcessEnv): PasswordHashCost {
  const parallelism = integer(env, 'PASSWORD_HASH_PARALLELISM', 4, 1, 16);
  // Argon2 needs 8 KiB a lane; 4 GiB is the most that is not a typo.
  const memoryKib = integer(env, 'PASSWORD_HASH_MEMORY_KIB', 65_536, 8 * parallelism, 4 * 1024 * 1024);
  return { memoryKib, iterations: integer(env, 'PASSWORD_HASH_ITERATIONS', 3, 1, 100), parallelism };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Refused at start, naming the variable: pino's own message ("default level:loud must be included
 * in custom levels") and MikroORM's for a URL without a database name named neither.
 */
function logLevel(env: NodeJS.ProcessEnv): string {
  const level = optional(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(level)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  return level;
}

/**
 * `CORS_ORIGINS`: `*`, or origins separated by commas (scheme, host and port, as a browser sends
 * them in `Origin`), kept in the form a browser writes them: `HTTPS://App.example.com:443/`
 * would otherwise never equal the browser's `https://app.example.com`.
 */
function corsOriginsOf(env: NodeJS.ProcessEnv): string[] | '*' {
  const raw = optional(env, 'CORS_ORIGINS');
  if (raw === undefined) return [];
  if (raw.trim() === '*') return '*';
  return raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '').map((entry) => {
    const url = URL.canParse(entry) ? new URL(entry) : undefined;
    const originOnly = url && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
    if (!url || !originOnly || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new ConfigError(`CORS_ORIGINS must be "*" or origins separated by commas, each scheme://host[:port] such as https://app.example.com, got "${entry}"`);
    }
    return url.origin;
  });
}

function databaseUrlOf(env: NodeJS.ProcessEnv): string | undefined {
  const raw = optional(env, 'DATABASE_URL');
  if (raw === undefined) return undefined;
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (!url || (url.protocol !== 'postgresql:' && url.protocol !== 'postgres:') || url.pathname.length < 2) {
    throw new ConfigError('DATABASE_URL must be a PostgreSQL URL naming a database, postgresql://user[:password]@host[:port]/database');
  }
  return raw;
}

function optional(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

/** The options the configured vector-store plugin is created with (undefined ones keep its defaults). */
export function vectorStoreOptions(config: Config): Record<string, unknown> {
  return { expansionSearch: config.hnswExpansionSearch };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const databaseUrl = databaseUrlOf(env);
  // The embedded database cannot keep up with live HNSW inserts (~130 rows/s, ../shared/STACK.md),
  // so without DATABASE_URL vectors and BM25 live in process, persisted in PGlite.
  const vectorStore = optional(env, 'VECTOR_STORE') ?? (databaseUrl ? 'pgvector' : 'embedded');
  if (vectorStore !== 'embedded' && vectorStore !== 'pgvector' && vectorStore !== 'weaviate') {
    throw new ConfigError(`VECTOR_STORE must be "embedded", "pgvector" or "weaviate", got "${vectorStore}"`);
  }
  const keywordIndex = optional(env, 'KEYWORD_INDEX') ?? (databaseUrl ? 'sql' : 'memory');
  if (keywordIndex !== 'memory' && keywordIndex !== 'sql') {
    throw new ConfigError(`KEYWORD_INDEX must be "memory" or "sql", got "${keywordIndex}"`);
  }
  const fileStore = optional(env, 'FILE_STORE') ?? 'local';
  if (fileStore !== 'local' && fileStore !== 's3') throw new ConfigError(`FILE_STORE must be "local" or "s3", got "${fileStore}"`);
  if (fileStore === 's3' && !optional(env, 'S3_BUCKET')) throw new ConfigError('FILE_STORE=s3 needs S3_BUCKET');
  const captionPlugin = optional(env, 'CAPTION_LLM');
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: optional(env, 'HOST') ?? '0.0.0.0',
    dataDir: path.resolve(optional(env, 'DATA_DIR') ?? './data'),
    databaseUrl,
    vectorStore,
    keywordIndex,
    weaviateUrl: optional(env, 'WEAVIATE_URL'),
    weaviateApiKey: optional(env, 'WEAVIATE_API_KEY'),
    masterKey: optional(env, 'MASTER_KEY'),
    logLevel: logLevel(env),
    corsOrigins: corsOriginsOf(env),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 10 * 1024 * 1024, 1024),
    uploadLimitBytes: integer(env, 'UPLOAD_LIMIT_BYTES', 100 * 1024 * 1024, 1024),
    originalsInDatabaseMaxBytes: integer(env, 'ORIGINALS_IN_DATABASE_MAX_BYTES', 64 * 1024),
    workerConcurrency: integer(env, 'WORKER_CONCURRENCY', 2),
    parseOnThreadMinBytes: integer(env, 'PARSE_ON_THREAD_MIN_BYTES', 256 * 1024),
    parseMemoryLimitMb: integer(env, 'PARSE_MEMORY_LIMIT_MB', 1024, 16),
    parseTimeoutMs: integer(env, 'PARSE_TIMEOUT_S', 300, 1) * 1000,
    apiKeyCacheMs: integer(env, 'API_KEY_CACHE_MS', 2000),
    passwordHashCost: passwordHashCostOf(env),
    collectionCacheMs: integer(env, 'COLLECTION_CACHE_MS', 2000),
    jobLeaseMs: integer(env, 'JOB_LEASE_S', 60, 1) * 1000,
    queryCacheMaxBytes: integer(env, 'QUERY_CACHE_MAX_MB', 64) * 1024 * 1024,
    hnswExpansionSearch: optionalInteger(env, 'EMBEDDED_HNSW_EXPANSION_SEARCH', 1),
    providerTimeoutMs: integer(env, 'PROVIDER_TIMEOUT_MS', 30_000, 1),
    providerMaxRetries: integer(env, 'PROVIDER_MAX_RETRIES', 4),
    providerConcurrency: integer(env, 'PROVIDER_CONCURRENCY', 8, 1),
    providerQueryTimeoutMs: integer(env, 'PROVIDER_QUERY_TIMEOUT_MS', 10_000, 1),
    providerOutageWaitMs: integer(env, 'PROVIDER_OUTAGE_WAIT_S', 3600) * 1000,
    minFreeDiskBytes: integer(env, 'MIN_FREE_DISK_MB', 1024) * 1024 * 1024,
    embeddedCheckpointWalBytes: integer(env, 'EMBEDDED_CHECKPOINT_WAL_MB', 64) * 1024 * 1024,
    embeddedVacuumIntervalMs: integer(env, 'EMBEDDED_VACUUM_INTERVAL_S', 60) * 1000,
    postgresUpkeepIntervalMs: integer(env, 'POSTGRES_UPKEEP_INTERVAL_S', 60) * 1000,
    keywordPackIntervalMs: integer(env, 'KEYWORD_PACK_INTERVAL_S', 30) * 1000,
    queryEventsRetentionDays: integer(env, 'QUERY_EVENTS_RETENTION_DAYS', 30, 0, 36_500),
    embeddingCacheMaxBytes: integer(env, 'EMBEDDING_CACHE_MAX_MB', 1024) * 1024 * 1024,
    uploadSessionExpiryMs: integer(env, 'UPLOAD_SESSION_EXPIRY_HOURS', 24) * 3_600_000,
    metadataRangeIndexesPerCollection: integer(env, 'METADATA_RANGE_INDEXES', 8),
    fileStore,
    s3: {
      endpoint: optional(env, 'S3_ENDPOINT'),
      bucket: optional(env, 'S3_BUCKET'),
      region: optional(env, 'S3_REGION') ?? 'us-east-1',
      accessKeyId: optional(env, 'S3_ACCESS_KEY_ID'),
      secretAccessKey: optional(env, 'S3_SECRET_ACCESS_KEY'),
      forcePathStyle: optional(env, 'S3_FORCE_PATH_STYLE') === 'true',
      prefix: optional(env, 'S3_PREFIX') ?? '',
    },
    warmUpIndexes: boolean(env, 'INDEX_WARM_UP', true),
    captionLlm: captionPlugin
      ? { plugin: captionPlugin, model: optional(env, 'CAPTION_LLM_MODEL'), apiKey: optional(env, 'CAPTION_LLM_API_KEY'), baseUrl: optional(env, 'CAPTION_LLM_BASE_URL') }
      : undefined,
  };
}
