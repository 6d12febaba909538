/**
 * Truncates racing writes through two replicas on one PostgreSQL database: 16 clients, half on each
 * replica, send for BENCH_SECONDS (30) a truncate one request in seven (none in the last five
 * seconds), else a raw-vector upsert or a one-file upload, every one naming a word of its own. Once ingestion is done,
 * the collection must be consistent: a vector, keyword statistics and postings for every chunk and
 * nothing for a chunk that is gone, keyword search must find every chunk by its word, and the
 * collection's chunk totals (migration 0027) must count the chunk rows and their text's bytes. Also
 * counted: answers by status, and the deadlocks PostgreSQL resolved meanwhile (pg_stat_database),
 * each a second's wait (deadlock_timeout) for the requests in it.
 *
 * The race tests (test/collections/truncate-races.test.ts) hold each moment found here open on
 * purpose; this measures how the whole behaves under load, which no test can assert.
 *
 * Run: npm run build && DATABASE_URL=postgresql://... npx tsx bench/races/truncate-under-writes.ts
 * (that database is dropped and recreated). Writes bench/results/truncate-under-writes.json
 * (BENCH_OUT overrides).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';
import { JsonClient, resetPostgresDatabase, startServiceAt, waitForIngestion } from '../search/harness.js';
import { bootstrapAdmin, machineDescription, writeResult } from '../support/service-process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('DATABASE_URL must name a PostgreSQL database: two replicas share it');
const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const out = process.env.BENCH_OUT ?? path.join(root, 'bench/results/truncate-under-writes.json');
const CLIENTS = 16;
const COLLECTION = 'raced';
const DIMENSION = 384;
const log = (message: string) => process.stderr.write(`[truncate-under-writes] ${message}\n`);

await resetPostgresDatabase(databaseUrl);
const dataDirs = [await mkdtemp(path.join(os.tmpdir(), 'rs-race-a-')), await mkdtemp(path.join(os.tmpdir(), 'rs-race-b-'))];
const replicas = [await startServiceAt(dataDirs[0]!, { DATABASE_URL: databaseUrl })];
const { key } = await bootstrapAdmin(replicas[0]!.baseUrl);
replicas.push(await startServiceAt(dataDirs[1]!, { DATABASE_URL: databaseUrl }));
const clients = replicas.map((replica) => new JsonClient(replica.baseUrl, key));
const database = new pg.Client({ connectionString: databaseUrl });
await database.connect();

try {
  const created = await clients[0]!.request('POST', '/v1/collections', { name: COLLECTION });
  if (created.status !== 201) throw new Error(`collection: ${created.status} ${JSON.stringify(created.body)}`);
  const deadlocks = async () => Number((await database.query('select deadlocks from pg_stat_database where datname = current_database()')).rows[0].deadlocks);
  const deadlocksBefore = await deadlocks();

  const answers = new Map<string, number>();
  const count = (what: string) => answers.set(what, (answers.get(what) ?? 0) + 1);
  let serial = 0;
  const deadline = Date.now() + seconds * 1000;
  log(`${CLIENTS} clients for ${seconds} s through 2 replicas`);
  await Promise.all(Array.from({ length: CLIENTS }, async (_, clientIndex) => {
    const replica = replicas[clientIndex % 2]!;
    const client = clients[clientIndex % 2]!;
    while (Date.now() < deadline) {
      const n = serial++;
      // The last five seconds write only, so that the collection is left holding rows to check.
      if (n % 7 === 0 && Date.now() < deadline - 5000) {
        count(`truncate ${(await client.request('POST', `/v1/collections/${COLLECTION}/truncate`)).status}`);
      } else if (n % 2 === 0) {
        const text = `word${n} raw vector number ${n}`;
        const upserted = await client.request('POST', `/v1/collections/${COLLECTION}/vectors/upsert`, {
          vectors: [{ id: `vector-${n}`, embedding: Array.from(hashedTextVector(text, DIMENSION)), text }],
        });
        count(`upsert ${upserted.status}`);
      } else {
        const form = new FormData();
        form.append('file', new Blob([`word${n} document number ${n}. `.repeat(30)], { type: 'text/plain' }), `document-${n}.txt`);
        const response = await fetch(`${replica.baseUrl}/v1/collections/${COLLECTION}/documents`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
        await response.arrayBuffer();
        count(`upload ${response.status}`);
      }
    }
  }));
  await waitForIngestion(clients[0]!, COLLECTION);
  const deadlocksDuring = (await deadlocks()) - deadlocksBefore;

  const [collection] = (await database.query('select id from collections where name = $1', [COLLECTION])).rows as Array<{ id: string }>;
  const scalar = async (statement: string) => Number((await database.query(statement, [collection!.id])).rows[0].n);
  const chunks = (await database.query('select id, text from chunks where collection_id = $1', [collection!.id])).rows as Array<{ id: string; text: string }>;
  let notFoundByKeyword = 0;
  for (const chunk of chunks) {
    const { body } = await clients[0]!.request('POST', `/v1/collections/${COLLECTION}/query`, { query: chunk.text.split(' ')[0], search_mode: 'keyword', skip_cache: true, top_k: 50 });
    if (!body.results.some((result: { id: string }) => result.id === chunk.id)) notFoundByKeyword += 1;
  }
  const consistency = {
    chunks: chunks.length,
    vectors: await scalar('select count(*) as n from pgvector_embeddings where collection_id = $1'),
    vectors_without_chunk: await scalar('select count(*) as n from pgvector_embeddings e where collection_id = $1 and not exists (select 1 from chunks c where c.key = e.chunk_key)'),
    keyword_statistics_chunks: await scalar('select coalesce(sum(chunk_count), 0) as n from keyword_stats where collection_id = $1'),
    chunks_with_postings: await scalar('select count(distinct chunk_key) as n from keyword_postings where collection_id = $1'),
    chunks_not_found_by_keyword: notFoundByKeyword,
    index_removals_owed: await scalar('select count(*) as n from pending_index_removals where collection_id = $1'),
    chunk_text_bytes: await scalar('select coalesce(sum(octet_length(text)), 0) as n from chunks where collection_id = $1'),
    stored_chunk_total: await scalar('select coalesce(sum(chunks), 0) as n from collection_chunk_totals where collection_id = $1'),
    stored_chunk_text_bytes: await scalar('select coalesce(sum(text_bytes), 0) as n from collection_chunk_totals where collection_id = $1'),
  };
  const consistent = consistency.vectors === consistency.chunks && consistency.vectors_without_chunk === 0
    && consistency.keyword_statistics_chunks === consistency.chunks && consistency.chunks_with_postings === consistency.chunks
    && consistency.chunks_not_found_by_keyword === 0 && consistency.index_removals_owed === 0
    && consistency.stored_chunk_total === consistency.chunks && consistency.stored_chunk_text_bytes === consistency.chunk_text_bytes;
  const result = {
    bench: 'truncate-under-writes',
    machine: machineDescription(),
    settings: { clients: CLIENTS, seconds, replicas: 2, truncate_share: '1 in 7', database: 'postgresql' },
    answers: Object.fromEntries([...answers].sort()),
    deadlocks: deadlocksDuring,
    consistency,
    consistent,
  };
  await writeResult(out, result);
  log(JSON.stringify(result));
  if (!consistent) process.exitCode = 1;
} finally {
  await database.end();
  for (const replica of replicas) await replica.stop();
  for (const dataDir of dataDirs) await rm(dataDir, { recursive: true, force: true });
}
