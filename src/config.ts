import path from 'node:path';

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
  /** Largest JSON body accepted, in bytes. */
  bodyLimitBytes: number;
  /** Largest uploaded file accepted, in bytes. */
  uploadLimitBytes: number;
  /** Ingestion jobs processed at once by this process; 0 runs no in-process workers. */
  workerConcurrency: number;
  /** How long an API key lookup may be answered from memory before the database is asked again. */
  apiKeyCacheMs: number;
}

export class ConfigError extends Error {}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

function optional(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const databaseUrl = optional(env, 'DATABASE_URL');
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
  return {
    port: integer(env, 'PORT', 8080),
    host: optional(env, 'HOST') ?? '0.0.0.0',
    dataDir: path.resolve(optional(env, 'DATA_DIR') ?? './data'),
    databaseUrl,
    vectorStore,
    keywordIndex,
    weaviateUrl: optional(env, 'WEAVIATE_URL'),
    weaviateApiKey: optional(env, 'WEAVIATE_API_KEY'),
    masterKey: optional(env, 'MASTER_KEY'),
    logLevel: optional(env, 'LOG_LEVEL') ?? 'info',
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 10 * 1024 * 1024, 1024),
    uploadLimitBytes: integer(env, 'UPLOAD_LIMIT_BYTES', 100 * 1024 * 1024, 1024),
    workerConcurrency: integer(env, 'WORKER_CONCURRENCY', 2),
    apiKeyCacheMs: integer(env, 'API_KEY_CACHE_MS', 2000),
  };
}
