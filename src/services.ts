import { KeyedSerializer, type WriteLocks } from './concurrency/keyed-serializer.js';
import { ReplicaKeyLocks } from './concurrency/replica-key-locks.js';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { ApiKeyUsageTracker } from './auth/api-key-usage-tracker.js';
import { ApiKeyService } from './auth/api-keys.service.js';
import { PasswordHasher } from './auth/passwords.js';
import { CollectionDirectory } from './collections/collection-directory.js';
import type { CollectionDependencies } from './collections/collections.service.js';
import { vectorStoreOptions, type Config } from './config.js';
import { runEveryStep, throwFailures } from './graceful-stop.js';
import { SecretBox } from './crypto/secret-box.js';
import type { Database } from './db/database.js';
import { EmbeddedDatabaseUpkeep } from './db/embedded-database-upkeep.js';
import { ExpiredRecordsSweep } from './db/expired-records-sweep.js';
import { PostgresTableUpkeep } from './db/postgres-table-upkeep.js';
import { VectorIndexCacheWatch } from './db/vector-index-cache.js';
import { reusableDatabaseBytes } from './db/embedded-database-free-space.js';
import { Collection, type CollectionRecord } from './db/entities/index.js';
import { createSqlRunner } from './db/sql-runner.js';
import { resolveCollectionEmbedding } from './embedding/collection-embedding.js';
import { EmbeddingCache } from './embedding/embedding-cache.js';
import { EmbeddingCacheBound } from './embedding/embedding-cache-bound.js';
import { EmbeddingPresetService } from './embedding/embedding-presets.service.js';
import { EmbeddingUsageLedger } from './embedding/embedding-usage.js';
import { EmbeddingModels } from './ingestion/embedding-models.js';
import type { IngestionRuntime } from './ingestion/ingest-document.js';
import { IngestionWorker } from './ingestion/ingestion-worker.js';
import { JobQueue } from './ingestion/job-queue.js';
import { PluginRegistry } from './plugin-registry.js';
import type { Parser, SqlRunner } from './plugins.js';
import type { QueryResponse, QueryRuntime } from './search/collection-query.js';
import { IndexWarmUp } from './search/index-warm-up.js';
import { createMemoryKeywordIndex } from './search/keyword/memory-keyword-index.js';
import { KeywordPostingPacker } from './search/keyword/keyword-posting-packer.js';
import { createSqlKeywordIndex } from './search/keyword/sql-keyword-index.js';
import { QueryCache } from './search/query-cache.js';
import { QueryEventRecorder } from './search/query-events.js';
import { PendingIndexRemovalSweep } from './search/pending-index-removals.js';
import { checkRerankingSettings, RerankerModels } from './search/reranker-selection.js';
import { InProcessIndexesLock } from './search/in-process-indexes-lock.js';
import { dropCollectionIndexes, prepareIndexesOfLiveCollection, type SearchIndexes } from './search/search-indexes.js';
import { parseLargeFilesOnThreads } from './parsing/parsing-thread.js';
import { SettingsService } from './settings/settings.service.js';
import { storeElementImages } from './documents/element-files.js';
import { ImageCaptioner } from './documents/image-captioner.js';
import { createFileStore } from './storage/create-file-store.js';
import { PostgresMetadataRangeIndexes } from './search/metadata-range-indexes.js';
import type { FileStore } from './storage/file-store.js';
import { DiskSpaceGuard, type FreeSpaceReader } from './storage/disk-space.js';
import { UploadSessionExpiry } from './uploads/upload-session-expiry.js';

/**
 * The long-lived parts every route and worker shares. Built once per process by `createServices`
 * and handed to the Fastify app, the workers and the operator alike.
 */
export interface AppServices {
  config: Config;
  db: Database;
  sql: SqlRunner;
  secrets: SecretBox;
  settings: SettingsService;
  apiKeys: ApiKeyService;
  passwords: PasswordHasher;
  apiKeyUsage: ApiKeyUsageTracker;
  plugins: PluginRegistry;
  parsers: readonly Parser[];
  files: FileStore;
  indexes: SearchIndexes;
  /** Completes the index removals of deletions whose request failed after deleting the rows. */
  indexRemovals: PendingIndexRemovalSweep;
  embeddings: EmbeddingModels;
  embeddingCache: EmbeddingCache;
  /** Deletes the cache's oldest vectors beyond EMBEDDING_CACHE_MAX_MB, at start and every ten minutes. */
  embeddingCacheBound: EmbeddingCacheBound;
  embeddingUsage: EmbeddingUsageLedger;
  embeddingPresets: EmbeddingPresetService;
  jobs: JobQueue;
  ingestion: IngestionWorker;
  /**
   * Writes that check, then write, serialized per key (raw-vector ids, upload content hashes):
   * within the process, and on PostgreSQL across replicas.
   */
  writeLocks: WriteLocks;
  queryRuntime: QueryRuntime;
  /** Cancels open upload sessions idle past UPLOAD_SESSION_EXPIRY_HOURS, at start and every ten minutes. */
  uploadSessionExpiry: UploadSessionExpiry;
  /** Deletes expired login sessions, idempotency records, finished jobs and query events past QUERY_EVENTS_RETENTION_DAYS, cuts past days' query texts to their most asked and drops hourly query counts past two days, at start and hourly. */
  expiredRecordsSweep: ExpiredRecordsSweep;
  /** Loads the in-process indexes at start (config `warmUpIndexes`). */
  indexWarmUp: IndexWarmUp;
  /** Collections by name, cached briefly (see collection-directory.ts). */
  collections: CollectionDirectory;
  collectionDependencies: CollectionDependencies;
  /** Refuses writes while DATA_DIR's disk is nearly full (MIN_FREE_DISK_MB), when DATA_DIR holds data. */
  diskSpace: DiskSpaceGuard;
  /** Starts background work (ingestion workers); the app serves without it in tests that want control. */
  start(): Promise<void>;
  /** Ingestion stops claiming jobs and waits a bounded time for those in progress (see IngestionWorker.stop). */
  stopWork(): Promise<void>;
  /** Stops background work and flushes what is buffered; does not close the database. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  /** Where uploads are kept; defaults to DATA_DIR/files. */
  filesDir?: string;
  /** Stands in for the free space of DATA_DIR's disk (tests of a nearly full disk). */
  readDiskFreeBytes?: FreeSpaceReader;
}

/** How long a write waits for content or vector ids that another replica is writing (then 503). */
const WRITE_LOCK_WAIT_MS = 60_000;

/** The in-process indexes in use (KEYWORD_INDEX=memory, VECTOR_STORE=embedded), as their settings. */
function inProcessIndexSettings(config: Config): string[] {
  return [
    ...(config.keywordIndex === 'memory' ? ['KEYWORD_INDEX=memory'] : []),
    ...(config.vectorStore === 'embedded' ? ['VECTOR_STORE=embedded'] : []),
  ];
}

export async function createServices(config: Config, db: Database, logger: FastifyBaseLogger, options: ServiceOptions = {}): Promise<AppServices> {
  const secrets = new SecretBox(config.masterKey);
  if (!secrets.encrypts) logger.warn('MASTER_KEY is not set: stored secrets (API keys of providers, passwords of sources) are not encrypted at rest');
  const sql = createSqlRunner(db);
  const settings = new SettingsService(db.fork);
  await settings.load();
  const apiKeyUsage = new ApiKeyUsageTracker(db.fork, 1000, (error) => logger.error({ err: error }, 'could not record API key use'));
  apiKeyUsage.start();
  const apiKeys = new ApiKeyService(apiKeyUsage, config.apiKeyCacheMs);
  const passwords = new PasswordHasher(config.passwordHashCost);

  const plugins = new PluginRegistry();
  // The thread imports the built-in parsers itself: a plugin registered in this process stays here.
  const threadLimits = { minBytes: config.parseOnThreadMinBytes, memoryMb: config.parseMemoryLimitMb, timeoutMs: config.parseTimeoutMs };
  const parsers = plugins.parsers().map((parser) => (plugins.isBuiltIn('parser', parser.name) ? parseLargeFilesOnThreads(parser, threadLimits) : parser));
  const files = await createFileStore(config, options.filesDir);
  if (config.vectorStore === 'weaviate') throw new Error('VECTOR_STORE=weaviate is not available in this version');
  const indexes: SearchIndexes = {
    vectorStore: plugins.create('vector-store', config.vectorStore, vectorStoreOptions(config), { sql, stateDirectory: path.join(config.dataDir, 'vector-store'), logger: logger.child({ component: 'vector-store' }) }),
    keywordIndex: config.keywordIndex === 'memory' ? createMemoryKeywordIndex(sql) : createSqlKeywordIndex(sql),
    // The embedded database's vector store keeps an index of metadata values of its own.
    rangeIndexes: db.kind === 'postgresql'
      ? new PostgresMetadataRangeIndexes(sql, logger.child({ component: 'range-indexes' }), { maxPerCollection: config.metadataRangeIndexesPerCollection })
      : undefined,
  };
  const remoteCalls = {
    timeoutMs: config.providerTimeoutMs, maxRetries: config.providerMaxRetries, concurrency: config.providerConcurrency, queryTimeoutMs: config.providerQueryTimeoutMs,
  };
  const providerLogger = logger.child({ component: 'providers' });
  const embeddingCache = new EmbeddingCache(sql);
  const embeddingCacheBound = new EmbeddingCacheBound(embeddingCache, logger.child({ component: 'embedding-cache' }), config.embeddingCacheMaxBytes);
  const embeddingUsage = new EmbeddingUsageLedger(sql, (error) => providerLogger.error({ err: error }, 'could not record embedding usage'));
  embeddingUsage.start();
  const embeddings = new EmbeddingModels(plugins, secrets, {
    cache: embeddingCache, ledger: embeddingUsage, cacheEnabled: () => settings.get<boolean>('embedding_cache_enabled'), remoteCalls, logger: providerLogger,
  });
  const collections = new CollectionDirectory(db.fork, config.collectionCacheMs);
  const embeddingPresets = new EmbeddingPresetService(sql, secrets, plugins, embeddings, collections);
  const rerankers = new RerankerModels(plugins, secrets, { remoteCalls, logger: providerLogger });
  const loadCollection = async (collectionId: string): Promise<CollectionRecord | null> => db.fork().findOne(Collection, { id: collectionId });

  const captioner = new ImageCaptioner(plugins, config.captionLlm);
  const dataDirHoldsData = db.kind === 'pglite' || config.fileStore === 'local' || config.vectorStore === 'embedded';
  const diskSpace = new DiskSpaceGuard(config.dataDir, dataDirHoldsData ? config.minFreeDiskBytes : 0, {
    readDisk: options.readDiskFreeBytes,
    readReusable: db.kind === 'pglite' ? () => reusableDatabaseBytes(sql) : undefined,
  });
  const jobs = new JobQueue(sql, `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`, config.jobLeaseMs);
  const ingestionRuntime: IngestionRuntime = {
    sql, files, parsers, vectorStore: indexes.vectorStore, keywordIndex: indexes.keywordIndex,
    embeddingModelFor: (collection) => embeddings.forCollection(collection),
    loadCollection: async (collectionId) => {
      const collection = await loadCollection(collectionId);
      // A collection deleted meanwhile is gone to its documents' jobs too; its indexes are not made again.
      if (!collection || !await prepareIndexesOfLiveCollection(sql, indexes, collection)) return null;
      return collection;
    },
    recordWrite: (collectionId) => collections.recordWrite(sql, collectionId),
    storeElementImages: (collection, documentId, elements) => storeElementImages({ files, captioner }, collection, documentId, elements),
  };
  const ingestionFillsDataDir = db.kind === 'pglite' || config.vectorStore === 'embedded';
  const ingestion = new IngestionWorker(jobs, ingestionRuntime, sql, logger, config.workerConcurrency, config.providerOutageWaitMs, ingestionFillsDataDir ? diskSpace : null);
  const indexRemovals = new PendingIndexRemovalSweep(
    { sql, indexes, recordWrite: (collectionId) => collections.recordWrite(sql, collectionId) }, logger.child({ component: 'index-removals' }),
  );

  const upkeep = db.kind === 'pglite'
    ? new EmbeddedDatabaseUpkeep(sql, logger.child({ component: 'database' }), { checkpointWalBytes: config.embeddedCheckpointWalBytes, vacuumIntervalMs: config.embeddedVacuumIntervalMs })
    : new PostgresTableUpkeep(sql, logger.child({ component: 'database' }), config.postgresUpkeepIntervalMs);
  const vectorIndexCacheWatch = db.kind === 'postgresql' && config.vectorStore === 'pgvector'
    ? new VectorIndexCacheWatch(sql, logger.child({ component: 'database' }), config.postgresUpkeepIntervalMs)
    : null;
  const keywordPacker = new KeywordPostingPacker(sql, logger.child({ component: 'keyword-index' }), config.keywordIndex === 'sql' ? config.keywordPackIntervalMs : 0);
  const indexWarmUp = new IndexWarmUp(sql, indexes, logger.child({ component: 'index-warm-up' }));
  const events = new QueryEventRecorder(sql, (error) => logger.error({ err: error }, 'could not record query events'));
  events.start();
  const uploadSessionExpiry = new UploadSessionExpiry(sql, files, logger.child({ component: 'upload-sessions' }), config.uploadSessionExpiryMs);
  const expiredRecordsSweep = new ExpiredRecordsSweep(sql, logger.child({ component: 'database' }), config.queryEventsRetentionDays);
  const queryRuntime: QueryRuntime = {
    sql, indexes,
    embeddingModelFor: (collection) => embeddings.forCollection(collection),
    rerankerFor: (collection) => rerankers.forCollection(collection),
    cache: new QueryCache<QueryResponse>({ maxBytes: config.queryCacheMaxBytes }),
    cacheTtlSeconds: () => settings.get<number>('query_cache_ttl_s'),
    events,
  };

  const collectionDependencies: CollectionDependencies = {
    directory: collections, secrets, settings,
    resolveEmbedding: (input) => resolveCollectionEmbedding({ registry: plugins, presets: embeddingPresets, secrets }, input),
    checkReranking: (model, baseUrl, hasApiKey) => checkRerankingSettings(plugins, model, baseUrl, hasApiKey),
    prepareIndexes: async (collection) => {
      await prepareIndexesOfLiveCollection(sql, indexes, collection);
    },
    dropIndexes: (collection) => dropCollectionIndexes(indexes, collection),
    forgetModels: (collection) => {
      embeddings.forget(collection.id);
      rerankers.forget(collection.id);
    },
    removeFiles: (collection) => files.remove(collection.id),
    retryWaitingForProvider: (collectionId) => jobs.retryWaitingForProvider(collectionId),
  };

  // One replica per PostgreSQL database may keep its indexes in its process (in-process-indexes-lock.ts).
  // Taken last: nothing after it can fail and leave its session open.
  const inProcessIndexes = inProcessIndexSettings(config);
  const inProcessIndexesLock = db.kind === 'postgresql' && config.databaseUrl && inProcessIndexes.length > 0
    ? await InProcessIndexesLock.take(config.databaseUrl, inProcessIndexes, logger)
    : undefined;

  const writeLocks: WriteLocks = db.kind === 'postgresql' && config.databaseUrl
    ? new ReplicaKeyLocks(config.databaseUrl, {
      waitMs: WRITE_LOCK_WAIT_MS,
      onSessionError: (error) => logger.warn({ err: error }, 'the write-lock session to PostgreSQL failed; the next write opens a new one'),
    })
    : new KeyedSerializer();

  return {
    config, db, sql, secrets, settings, apiKeys, passwords, apiKeyUsage, plugins, parsers, files, indexes, indexRemovals, embeddings, embeddingCache, embeddingCacheBound, embeddingUsage, embeddingPresets,
    jobs, ingestion, writeLocks,
    queryRuntime, uploadSessionExpiry, expiredRecordsSweep, indexWarmUp, collections, collectionDependencies, diskSpace,
    async start() {
      // The embedded database has one process, so whatever is `running` at start was left by a crash.
      await ingestion.start({ requeueAllRunning: db.kind === 'pglite' });
      indexRemovals.start();
      upkeep.start();
      vectorIndexCacheWatch?.start();
      keywordPacker.start();
      embeddingCacheBound.start();
      uploadSessionExpiry.start();
      expiredRecordsSweep.start();
      if (config.warmUpIndexes && (config.vectorStore === 'embedded' || config.keywordIndex === 'memory')) indexWarmUp.start();
    },
    stopWork: () => ingestion.stop(),
    async stop() {
      // ingestion.stop() again does nothing after stopWork. Every step runs even when one fails (pending usage is still written, indexes still closed).
      throwFailures(await runEveryStep([
        () => indexWarmUp.stop(), () => ingestion.stop(), () => indexRemovals.stop(), () => upkeep.stop(), async () => vectorIndexCacheWatch?.stop(), () => keywordPacker.stop(), () => embeddingCacheBound.stop(), () => uploadSessionExpiry.stop(), () => expiredRecordsSweep.stop(), () => events.stop(), () => embeddingUsage.stop(), () => apiKeyUsage.stop(),
        async () => indexes.rangeIndexes?.close(), () => indexes.keywordIndex.close(), () => indexes.vectorStore.close(), async () => files.close?.(), () => writeLocks.close(),
        async () => inProcessIndexesLock?.close(),
      ]), 'shutdown steps of the services');
    },
  };
}
