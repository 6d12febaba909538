/**
 * "Direct": the service's own query path (src/search/collection-query.ts queryCollection, the same
 * index classes the service builds, the same SQL) run in the benchmark process on the service's
 * data, without HTTP, Fastify, authentication or the per-request collection lookup.
 *
 * Two SqlRunners: the service's (createSqlRunner over openDatabase: MikroORM + knex, parameters
 * inlined), and a raw driver (node-postgres, or PGlite's own `query`) that sends the very same
 * statements with bound parameters; so the gap between HTTP and direct splits into what HTTP costs
 * and what the ORM layer costs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite/vector';
import pg from 'pg';
import { loadConfig, vectorStoreOptions, type Config } from '../../src/config.js';
import { SecretBox } from '../../src/crypto/secret-box.js';
import type { CollectionRecord } from '../../src/db/entities/index.js';
import { arrayToLiteral } from '../../src/db/sql-runner.js';
import { EmbeddingCache } from '../../src/embedding/embedding-cache.js';
import { EmbeddingUsageLedger } from '../../src/embedding/embedding-usage.js';
import { EmbeddingModels } from '../../src/ingestion/embedding-models.js';
import { createLogger } from '../../src/logger.js';
import { PluginRegistry } from '../../src/plugin-registry.js';
import type { SqlRunner } from '../../src/plugins.js';
import { queryCollection, type QueryResponse, type QueryRuntime, type QueryTimings } from '../../src/search/collection-query.js';
import { createMemoryKeywordIndex } from '../../src/search/keyword/memory-keyword-index.js';
import { createSqlKeywordIndex } from '../../src/search/keyword/sql-keyword-index.js';
import { QueryCache } from '../../src/search/query-cache.js';
import type { QueryEventRecorder } from '../../src/search/query-events.js';
import { RerankerModels } from '../../src/search/reranker-selection.js';
import { type SearchIndexes } from '../../src/search/search-indexes.js';

type Statement = <Row = Record<string, unknown>>(query: string, params?: unknown[]) => Promise<Row[]>;

/** The service's configuration choices (vector store, keyword index) for this database. */
export function serviceConfig(databaseUrl: string | undefined): Config {
  const env = { ...process.env };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  else delete env.DATABASE_URL;
  return loadConfig(env);
}

/**
 * The indexes the service builds in src/services.ts, over `sql`. With the service's
 * `stateDirectory`, the embedded store loads the graph the service saved at its stop, so both
 * search the same graph (and loading skips a rebuild).
 */
export function serviceIndexes(config: Config, sql: SqlRunner, stateDirectory?: string): SearchIndexes {
  return {
    vectorStore: new PluginRegistry().create('vector-store', config.vectorStore, vectorStoreOptions(config), { sql, stateDirectory }),
    keywordIndex: config.keywordIndex === 'memory' ? createMemoryKeywordIndex(sql) : createSqlKeywordIndex(sql),
  };
}

/**
 * knex `?` placeholders → `$n` (a `\?` stays a literal `?`; quoted strings are left alone), as
 * the statements of the query path contain no other `?`.
 */
export function positionalPlaceholders(query: string): string {
  let result = '';
  let position = 0;
  let quoted = false;
  for (let index = 0; index < query.length; index++) {
    const character = query[index]!;
    if (character === "'") quoted = !quoted;
    else if (!quoted && character === '\\' && query[index + 1] === '?') {
      result += '?';
      index++;
      continue;
    } else if (!quoted && character === '?') {
      result += `$${++position}`;
      continue;
    }
    result += character;
  }
  return result;
}

/** A SqlRunner over a node-postgres pool: the same statements, bound parameters, no ORM. */
export function pgSqlRunner(pool: pg.Pool): SqlRunner {
  const on = (client: pg.Pool | pg.PoolClient): Statement => async <Row>(query: string, params: unknown[] = []) =>
    (await client.query(positionalPlaceholders(query), params.map(arrayToLiteral))).rows as Row[];
  const runner = on(pool) as SqlRunner;
  Object.assign(runner, {
    dialect: 'postgresql',
    async transaction<T>(work: (sql: Statement) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await work(on(client));
        await client.query('commit');
        return result;
      } catch (error) {
        await client.query('rollback').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
  });
  return runner;
}

/** A SqlRunner over PGlite's own query API: the same statements, bound parameters, no ORM. */
export function pgliteSqlRunner(database: PGlite): SqlRunner {
  type Queryable = Pick<PGlite, 'query'>;
  const on = (target: Queryable): Statement => async <Row>(query: string, params: unknown[] = []) =>
    (await target.query<Row>(positionalPlaceholders(query), params.map(arrayToLiteral))).rows;
  const runner = on(database) as SqlRunner;
  Object.assign(runner, {
    dialect: 'pglite',
    transaction: <T>(work: (sql: Statement) => Promise<T>): Promise<T> => database.transaction((tx) => work(on(tx))),
  });
  return runner;
}

export async function openRawPglite(dataDir: string): Promise<PGlite> {
  return PGlite.create({ dataDir, extensions: { vector } });
}

/** What the service passes to queryCollection, minus the query-event writes (buffered there, 1/s). */
export function directRuntime(config: Config, sql: SqlRunner, indexes: SearchIndexes): QueryRuntime {
  const registry = new PluginRegistry();
  const secrets = new SecretBox(undefined);
  const remoteCalls = { timeoutMs: 30_000, maxRetries: 4, concurrency: 8 };
  const logger = createLogger('silent');
  const embeddings = new EmbeddingModels(registry, secrets, {
    cache: new EmbeddingCache(sql), ledger: new EmbeddingUsageLedger(sql), cacheEnabled: async () => true, remoteCalls, logger,
  });
  const rerankers = new RerankerModels(registry, secrets, { remoteCalls, logger });
  const events = { record() {}, start() {}, async flush() {}, async stop() {} } as unknown as QueryEventRecorder;
  return {
    sql, indexes,
    embeddingModelFor: (collection) => embeddings.forCollection(collection),
    rerankerFor: (collection) => rerankers.forCollection(collection),
    cache: new QueryCache<QueryResponse>({ maxBytes: config.queryCacheMaxBytes }),
    cacheTtlSeconds: async () => 60,
    events,
  };
}

/**
 * Loads both indexes as the first query after a start does; seconds for each. The vector store's
 * include an embedded graph rebuilt behind the load (no snapshot), so direct searches the
 * settled graph, as the service is measured.
 */
export async function loadIndexes(indexes: SearchIndexes, collection: CollectionRecord): Promise<{ vector_store_s: number; keyword_index_s: number }> {
  let started = performance.now();
  await indexes.vectorStore.ensureCollection(collection.id, collection.dimension);
  while (((await indexes.vectorStore.describe(collection.id)).memory_index?.rows_awaiting_graph ?? 0) > 0) await sleep(100);
  const vectorSeconds = (performance.now() - started) / 1000;
  // The memory keyword index loads on first use: a search triggers it.
  started = performance.now();
  await indexes.keywordIndex.search({ collectionId: collection.id, query: 'warm', topK: 1 });
  const keywordSeconds = (performance.now() - started) / 1000;
  return { vector_store_s: Number(vectorSeconds.toFixed(2)), keyword_index_s: Number(keywordSeconds.toFixed(2)) };
}

export interface DirectRun {
  latencies: number[];
  timings: QueryTimings[];
  resultIds: string[][];
}

const idleCell = new Int32Array(new SharedArrayBuffer(4));

/**
 * Blocks this thread for `milliseconds` without spinning, so its CPU can go idle as the service's
 * does while it waits for the next request.
 */
function idleFor(milliseconds: number): void {
  Atomics.wait(idleCell, 0, 0, milliseconds);
}

/**
 * Runs `count` queries one after another (after `warmup` untimed ones). With `idleMs`, the thread
 * idles that long before each query: the pace at which the service's query code is called over
 * HTTP, where the machine may put the CPU to sleep and caches cool between requests.
 */
export async function runDirect(runtime: QueryRuntime, collection: CollectionRecord, queries: string[], mode: 'semantic' | 'keyword' | 'hybrid', count: number, warmup: number, idleMs = 0): Promise<DirectRun> {
  const run: DirectRun = { latencies: [], timings: [], resultIds: [] };
  for (let index = -warmup; index < count; index++) {
    const query = queries[((index % queries.length) + queries.length) % queries.length]!;
    if (idleMs > 0) idleFor(idleMs);
    const started = performance.now();
    const input = { query, search_mode: mode, top_k: 10, skip_cache: true } as unknown as Parameters<typeof queryCollection>[2];
    const response = await queryCollection(runtime, collection, input);
    const milliseconds = performance.now() - started;
    if (index < 0) continue;
    run.latencies.push(milliseconds);
    run.timings.push(response.timings);
    run.resultIds.push(response.results.map((result) => result.id));
  }
  return run;
}
