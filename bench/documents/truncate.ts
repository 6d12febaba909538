/**
 * Truncate (`POST /v1/collections/{name}/truncate`) and collection delete of a large collection,
 * through the public API on the built service. For each size: a collection is loaded with that many
 * corpus documents (about 2 KB each, 50 a batch) and queried (hybridQueries), truncated (timed),
 * loaded again and queried the same way (the indexes emptied by the truncate take writes again, as
 * fast as before), then deleted (timed). The
 * truncate locks every document of the collection in one transaction before deleting it
 * (src/documents/chunk-store.ts, deleteCollectionRows); this measures what that costs at scale.
 *
 * Run: npm run build && npx tsx bench/documents/truncate.ts [sizes=5000,20000]
 * DATABASE_URL: PostgreSQL (that database is dropped and recreated); else the embedded database in a
 * temporary directory. BENCH_FILE_STORE=s3: the service keeps its files in s3rver, run in a process
 * of its own (ORIGINALS_IN_DATABASE_MAX_BYTES=0 puts every original there too). BENCH_SETTLE_S: the
 * pause before the second round of queries (60). Writes bench/results/truncate-<pglite|postgresql>.json,
 * `-s3` added with BENCH_FILE_STORE=s3 (BENCH_OUT overrides).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { topics } from '../search/corpus.js';
import { JsonClient, LOAD_DOCUMENTS_PER_BATCH, loadCorpusDocuments, resetPostgresDatabase, startServiceAt, summarize, waitForIngestion } from '../search/harness.js';
import { startLocalS3Process } from '../../test/storage/s3-server.js';
import { bootstrapAdmin, machineDescription, writeResult } from '../support/service-process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const sizes = (process.argv[2] ?? '5000,20000').split(',').map(Number);
const databaseUrl = process.env.DATABASE_URL;
const database = databaseUrl ? 'postgresql' : 'pglite';
const fileStore = process.env.BENCH_FILE_STORE === 's3' ? 's3' : 'local';
const out = process.env.BENCH_OUT ?? path.join(root, `bench/results/truncate-${database}${fileStore === 's3' ? '-s3' : ''}.json`);
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_S ?? 60);
const log = (message: string) => process.stderr.write(`[truncate] ${message}\n`);

/**
 * Hybrid queries of 21 topics' words: right after a load (the first, and the p50 of the other 20),
 * then the same 21 again once SETTLE_SECONDS have passed, for the embedded graph's thread to take in
 * the last inserts it was sent.
 */
async function hybridQueries(client: JsonClient, collection: string) {
  const round = async () => {
    const times: number[] = [];
    for (let topic = 0; topic < 21; topic++) {
      const query = await client.request<{ results: unknown[] }>('POST', `/v1/collections/${collection}/query`, { query: topics[topic]!.join(' '), search_mode: 'hybrid', top_k: 10, skip_cache: true });
      if (query.body.results.length !== 10) throw new Error(`${collection}: ${query.body.results.length} results`);
      times.push(query.milliseconds);
    }
    return times;
  };
  const [first, ...rest] = await round();
  await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000));
  return { first_ms: Number(first!.toFixed(1)), next_20_p50_ms: summarize(rest).p50, settled_21_p50_ms: summarize(await round()).p50 };
}

if (databaseUrl) await resetPostgresDatabase(databaseUrl);
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-truncate-'));
// LOG_LEVEL=debug shows the embedded database's upkeep (vacuum, checkpoints) beside the timings.
const s3 = fileStore === 's3' ? await startLocalS3Process('rs-truncate-bench', 'bench') : undefined;
const s3Environment: Record<string, string> = s3 ? {
  FILE_STORE: 's3', S3_ENDPOINT: s3.config.endpoint!, S3_BUCKET: s3.config.bucket!, S3_ACCESS_KEY_ID: s3.config.accessKeyId!,
  S3_SECRET_ACCESS_KEY: s3.config.secretAccessKey!, S3_FORCE_PATH_STYLE: 'true', S3_PREFIX: s3.config.prefix,
} : {};
const service = await startServiceAt(dataDir, {
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), ...(process.env.LOG_LEVEL ? { LOG_LEVEL: process.env.LOG_LEVEL } : {}), ...s3Environment,
});
const runs = [];
try {
  const { key } = await bootstrapAdmin(service.baseUrl);
  const client = new JsonClient(service.baseUrl, key, 8);
  for (const documents of sizes) {
    const collection = `truncate-${documents}`;
    await client.request('POST', '/v1/collections', { name: collection });
    const loaded = await loadCorpusDocuments(service.baseUrl, key, client, collection, documents);
    log(`${documents} documents, ${loaded.chunks} chunks loaded in ${loaded.seconds.toFixed(0)} s`);

    const beforeTruncate = await hybridQueries(client, collection);
    log(`before the truncate: ${JSON.stringify(beforeTruncate)}`);

    const truncate = await client.request<{ deleted_documents?: number }>('POST', `/v1/collections/${collection}/truncate`);
    const after = await waitForIngestion(client, collection);
    if (after.chunks !== 0) throw new Error(`${collection}: ${after.chunks} chunks after the truncate`);
    log(`truncate ${truncate.milliseconds.toFixed(0)} ms: ${JSON.stringify(truncate.body)}`);

    const reloaded = await loadCorpusDocuments(service.baseUrl, key, client, collection, documents);
    const afterTruncate = await hybridQueries(client, collection);
    log(`reloaded in ${reloaded.seconds.toFixed(0)} s; after the truncate: ${JSON.stringify(afterTruncate)}`);

    const removal = await client.request('DELETE', `/v1/collections/${collection}`);
    log(`collection delete ${removal.milliseconds.toFixed(0)} ms`);
    runs.push({
      documents,
      chunks: loaded.chunks,
      load_seconds: Number(loaded.seconds.toFixed(1)),
      truncate_ms: Math.round(truncate.milliseconds),
      truncate_answer: truncate.body,
      reload_seconds: Number(reloaded.seconds.toFixed(1)),
      hybrid_queries_before_truncate: beforeTruncate,
      hybrid_queries_after_truncate_and_reload: afterTruncate,
      collection_delete_ms: Math.round(removal.milliseconds),
    });
    // After each size: a long run stopped midway keeps what it measured.
    await writeResult(out, {
      benchmark: 'truncate', date: new Date().toISOString(), database, file_store: fileStore,
      originals_in_database_max_bytes: process.env.ORIGINALS_IN_DATABASE_MAX_BYTES ?? 'default', settle_seconds: SETTLE_SECONDS,
      machine: machineDescription(), documents_per_batch: LOAD_DOCUMENTS_PER_BATCH, runs,
    });
  }
  client.close();
} finally {
  await service.stop();
  await s3?.close();
  await rm(dataDir, { recursive: true, force: true });
}
