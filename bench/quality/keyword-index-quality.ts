/**
 * Loads Cranfield (title + " " + text per document, one chunk each, as /work/shared/tools/bm25_eval.py
 * indexes it) straight into each KeywordIndex implementation, not through HTTP, and prints
 * nDCG@10 / recall@100 (must equal the reference 0.3632 / 0.7396 within 0.001; exits 1 otherwise),
 * query latency (p50 / p95 over the 225 queries, top 100, after one warm-up pass) and ingestion
 * speed. Then times the memory index at scale: synthetic ~40-word chunks cut from Cranfield.
 * With --copies, also times the SQL index on PostgreSQL over that many copies of Cranfield; with
 * --growth-copies, what packing costs while such a collection grows and shrinks.
 *
 * Usage: npx tsx bench/quality/keyword-index-quality.ts [--database-url URL] [--scale N] [--copies N] [--growth-copies N] [--out FILE]
 *   --database-url  also run on PostgreSQL (a scratch database is created there and dropped);
 *                   defaults to TEST_DATABASE_URL when set
 *   --scale         chunks for the scale run (default 100000; 0 skips it)
 *   --copies        Cranfield copies for the SQL index on PostgreSQL (default 0, skipped; 50 makes
 *                   70k chunks whose common terms have long posting lists); needs --database-url
 *   --growth-copies  Cranfield copies added to the SQL index on PostgreSQL one at a time, a packing
 *                   round after each (as the service's packer runs beside ingestion), then a fifth of
 *                   them removed the same way (default 0, skipped); needs --database-url
 *   --out           where to write the JSON results (default bench/results/keyword-index-quality.json)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/logger.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import type { SqlRunner } from '../../src/plugins.js';
import { analyzeQuery, type KeywordEntry, type KeywordIndex } from '../../src/search/keyword/keyword-index.js';
import { createMemoryKeywordIndex } from '../../src/search/keyword/memory-keyword-index.js';
import { KeywordPostingPacker, packDueTerms } from '../../src/search/keyword/keyword-posting-packer.js';
import { createSqlKeywordIndex } from '../../src/search/keyword/sql-keyword-index.js';
import { readBeirDataset, type BeirDataset } from './beir-dataset.js';
import { ndcgAtK, recallAtK } from './metrics.js';

const cranfieldFolder = '/work/shared/datasets/cranfield';
const reference = { ndcgAt10: 0.3632, recallAt100: 0.7396 };
const tolerance = 0.001;
const topK = 100;

const { values: options } = parseArgs({
  options: {
    'database-url': { type: 'string', default: process.env.TEST_DATABASE_URL },
    scale: { type: 'string', default: '100000' },
    copies: { type: 'string', default: '0' },
    'growth-copies': { type: 'string', default: '0' },
    out: { type: 'string', default: 'bench/results/keyword-index-quality.json' },
  },
});

const factories: Record<KeywordIndex['name'], (sql: SqlRunner) => KeywordIndex> = {
  memory: createMemoryKeywordIndex,
  sql: createSqlKeywordIndex,
};

const round = (value: number, digits = 2) => Number(value.toFixed(digits));

function percentile(sortedValues: number[], fraction: number): number {
  return sortedValues[Math.max(0, Math.ceil(fraction * sortedValues.length) - 1)];
}

function latencySummary(milliseconds: number[]) {
  const sorted = [...milliseconds].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 0.5), 3), p95: round(percentile(sorted, 0.95), 3), max: round(sorted[sorted.length - 1], 3) };
}

/** A throwaway database on the server of `baseUrl` (as test/support/test-app.ts makes them). */
async function createScratchDatabase(baseUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `rs_bench_${randomBytes(6).toString('hex')}`;
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    await client.query(statement);
    await client.end();
  };
  await run(`create database ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`drop database if exists ${name} with (force)`) };
}

async function createCollection(sql: SqlRunner): Promise<string> {
  const id = randomUUID();
  await sql(
    `insert into collections (id, name, embedding_provider, embedding_model, dimension, chunk_size, chunk_overlap,
       chunk_strategy, default_top_k, default_min_score, default_search_mode, created_at, updated_at)
     values (?, ?, 'local', 'bench', 384, 800, 100, 'recursive', 10, 0, 'keyword', now(), now())`,
    [id, `bench-${id.slice(0, 8)}`],
  );
  return id;
}

/** The chunk rows, as the ingestion pipeline writes them before indexing (500 rows a statement). */
async function insertChunkRows(sql: SqlRunner, collectionId: string, entries: KeywordEntry[]): Promise<void> {
  for (let start = 0; start < entries.length; start += 500) {
    const rows = entries.slice(start, start + 500);
    await sql(
      `insert into chunks (key, id, collection_id, chunk_index, text, metadata, tenant, created_at)
       select row.key, 'chunk-' || row.key, ?::uuid, 0, row.text, '{}'::jsonb, null, now()
       from unnest(?::bigint[], ?::text[]) as row (key, text)`,
      [collectionId, rows.map((row) => row.key), rows.map((row) => row.text)],
    );
  }
}

interface QueryPass {
  ndcgAt10: number;
  recallAt100: number;
  latenciesMs: number[];
}

async function runQueries(index: KeywordIndex, collectionId: string, dataset: BeirDataset, documentIdOfKey: (key: number) => string): Promise<QueryPass> {
  let ndcgSum = 0;
  let recallSum = 0;
  const latenciesMs: number[] = [];
  for (const queryId of dataset.evaluatedQueryIds) {
    const started = performance.now();
    const hits = await index.search({ collectionId, query: dataset.queries.get(queryId) ?? '', topK });
    latenciesMs.push(performance.now() - started);
    const ranked = hits.map((hit) => documentIdOfKey(hit.key));
    const judgements = dataset.qrels.get(queryId) ?? new Map<string, number>();
    ndcgSum += ndcgAtK(ranked, judgements, 10);
    recallSum += recallAtK(ranked, judgements, 100);
  }
  const count = Math.max(dataset.evaluatedQueryIds.length, 1);
  return { ndcgAt10: ndcgSum / count, recallAt100: recallSum / count, latenciesMs };
}

async function benchmarkCranfield(name: KeywordIndex['name'], databaseUrl: string | undefined, dataset: BeirDataset) {
  const scratch = databaseUrl ? await createScratchDatabase(databaseUrl) : undefined;
  const db = await openDatabase({ databaseUrl: scratch?.url });
  try {
    const sql = createSqlRunner(db);
    const index = factories[name](sql);
    const collectionId = await createCollection(sql);
    // First use before any chunk exists, as for a new collection: the memory index loads nothing.
    await index.search({ collectionId, query: 'warm up', topK: 1 });
    const entries: KeywordEntry[] = dataset.documents.map((document, position) => ({
      key: position + 1,
      text: `${document.title} ${document.text}`.trim(),
      metadata: {},
      tenant: null,
    }));
    await insertChunkRows(sql, collectionId, entries);
    const ingestStarted = performance.now();
    await index.add(collectionId, entries);
    const ingestSeconds = (performance.now() - ingestStarted) / 1000;

    const documentIdOfKey = (key: number) => dataset.documents[key - 1].id;
    await runQueries(index, collectionId, dataset, documentIdOfKey); // warm-up pass
    const pass = await runQueries(index, collectionId, dataset, documentIdOfKey);

    let rebuild: { chunks: number; seconds: number; chunksPerSecond: number } | undefined;
    if (name === 'memory') {
      const rebuilt = factories[name](sql);
      const started = performance.now();
      await rebuilt.search({ collectionId, query: 'rebuild', topK: 1 });
      const seconds = (performance.now() - started) / 1000;
      rebuild = { chunks: entries.length, seconds: round(seconds, 3), chunksPerSecond: Math.round(entries.length / seconds) };
    }
    await index.close();
    const matchesReference =
      Math.abs(pass.ndcgAt10 - reference.ndcgAt10) <= tolerance && Math.abs(pass.recallAt100 - reference.recallAt100) <= tolerance;
    return {
      index: name,
      database: db.kind,
      ndcgAt10: round(pass.ndcgAt10, 4),
      recallAt100: round(pass.recallAt100, 4),
      matchesReference,
      ingest: { chunks: entries.length, seconds: round(ingestSeconds, 3), chunksPerSecond: Math.round(entries.length / ingestSeconds) },
      ...(rebuild ? { rebuildFromChunksTable: rebuild } : {}),
      queryMs: latencySummary(pass.latenciesMs),
    };
  } finally {
    await db.close();
    await scratch?.drop();
  }
}

/**
 * The memory index at `chunkCount` synthetic chunks: 40-word windows sliding over the Cranfield
 * texts (the calibration figures of ../shared/STACK.md use ~40-word texts). Queries are the
 * Cranfield queries cut to their first 5 terms, and whole.
 */
async function benchmarkMemoryAtScale(chunkCount: number, dataset: BeirDataset) {
  const db = await openDatabase({});
  try {
    const index = createMemoryKeywordIndex(createSqlRunner(db));
    const collectionId = randomUUID(); // no chunk rows: the lazy load finds none
    await index.search({ collectionId, query: 'warm up', topK: 1 });
    const words = dataset.documents.map((document) => `${document.title} ${document.text}`.split(/\s+/));
    const entries: KeywordEntry[] = [];
    for (let key = 1; key <= chunkCount; key++) {
      const documentWords = words[key % words.length];
      const start = (key * 7) % Math.max(1, documentWords.length - 40);
      entries.push({ key, text: documentWords.slice(start, start + 40).join(' '), metadata: { even: key % 2 === 0 }, tenant: null });
    }
    const started = performance.now();
    for (let offset = 0; offset < entries.length; offset += 1000) await index.add(collectionId, entries.slice(offset, offset + 1000));
    const ingestSeconds = (performance.now() - started) / 1000;

    const fullQueries = dataset.evaluatedQueryIds.map((id) => dataset.queries.get(id) ?? '');
    const fiveTermQueries = fullQueries
      .map((query) => analyzeQuery(query).slice(0, 5).map(({ term }) => term))
      .filter((terms) => terms.length === 5)
      .map((terms) => terms.join(' '));
    const time = async (queries: string[], filter?: boolean) => {
      const latencies: number[] = [];
      for (let pass = 0; pass < 2; pass++) {
        latencies.length = 0;
        for (const query of queries) {
          const queryStarted = performance.now();
          await index.search({ collectionId, query, topK: 10, ...(filter ? { filter: { kind: 'field', field: 'even', path: ['even'], condition: { operator: '$eq', value: true } } } : {}) });
          latencies.push(performance.now() - queryStarted);
        }
      }
      return { queries: queries.length, ...latencySummary(latencies) };
    };
    return {
      index: 'memory',
      chunks: chunkCount,
      wordsPerChunk: 40,
      ingest: { seconds: round(ingestSeconds, 2), chunksPerSecond: Math.round(chunkCount / ingestSeconds) },
      heapUsedMbAfterIngest: Math.round(process.memoryUsage().heapUsed / 1e6),
      top10Ms: {
        fiveTermQueries: await time(fiveTermQueries),
        fullQueries: await time(fullQueries),
        fullQueriesWithFilter: await time(fullQueries, true),
      },
    };
  } finally {
    await db.close();
  }
}

/** Copy `copy` (from 0) of Cranfield as index entries, keys after the copies before it. */
function cranfieldCopy(dataset: BeirDataset, copy: number): KeywordEntry[] {
  return dataset.documents.map((document, position) => ({
    key: copy * dataset.documents.length + position + 1,
    text: `${document.title} ${document.text}`.trim(),
    metadata: {},
    tenant: null,
  }));
}

/** `work` with the SQL index over a scratch database on the server of `databaseUrl`, dropped after. */
async function withSqlIndexOnScratchDatabase<T>(
  databaseUrl: string,
  work: (sql: SqlRunner, index: KeywordIndex, collectionId: string) => Promise<T>,
): Promise<T> {
  const scratch = await createScratchDatabase(databaseUrl);
  const db = await openDatabase({ databaseUrl: scratch.url });
  try {
    const sql = createSqlRunner(db);
    return await work(sql, createSqlKeywordIndex(sql), await createCollection(sql));
  } finally {
    await db.close();
    await scratch.drop();
  }
}

/**
 * The SQL index on PostgreSQL over `copies` copies of Cranfield, timed with the 225 questions, top
 * 10, before and after its postings are packed. The tables are vacuumed and analyzed first, as the
 * service's upkeep keeps them.
 */
async function benchmarkSqlAtScale(copies: number, databaseUrl: string, dataset: BeirDataset) {
  return withSqlIndexOnScratchDatabase(databaseUrl, async (sql, index, collectionId) => {
    const started = performance.now();
    for (let copy = 0; copy < copies; copy++) {
      const entries = cranfieldCopy(dataset, copy);
      await insertChunkRows(sql, collectionId, entries);
      await index.add(collectionId, entries);
    }
    const ingestSeconds = (performance.now() - started) / 1000;
    await sql('vacuum analyze keyword_postings');
    await sql('vacuum analyze keyword_stats');
    const queries = dataset.evaluatedQueryIds.map((id) => dataset.queries.get(id) ?? '');
    const timeQueries = async () => {
      const latencies: number[] = [];
      for (let pass = 0; pass < 2; pass++) {
        latencies.length = 0;
        for (const query of queries) {
          const queryStarted = performance.now();
          await index.search({ collectionId, query, topK: 10 });
          latencies.push(performance.now() - queryStarted);
        }
      }
      return { queries: queries.length, ...latencySummary(latencies) };
    };
    const unpacked = await timeQueries();
    // The service's packer does this in rounds every KEYWORD_PACK_INTERVAL_S.
    const packingStarted = performance.now();
    let termsPacked = 0;
    for (let packed = -1; packed !== 0; ) {
      ({ packed } = await packDueTerms(sql));
      termsPacked += packed;
    }
    const packingSeconds = (performance.now() - packingStarted) / 1000;
    await sql('vacuum analyze keyword_postings');
    await sql('vacuum analyze keyword_packed_postings');
    const packed = await timeQueries();
    const chunks = copies * dataset.documents.length;
    return {
      index: 'sql',
      database: 'postgresql',
      copies,
      chunks,
      ingest: { seconds: round(ingestSeconds, 1), chunksPerSecond: Math.round(chunks / ingestSeconds) },
      top10Ms: packed,
      top10MsBeforePacking: unpacked,
      packing: { terms: termsPacked, seconds: round(packingSeconds, 1) },
    };
  });
}

/**
 * What packing costs while a collection changes: `copies` copies of Cranfield added to the SQL index
 * on PostgreSQL one at a time, then every fifth copy removed, with one packing round after each
 * step (the service runs one every KEYWORD_PACK_INTERVAL_S beside ingestion), then rounds until
 * nothing is due. Times the index's writes and the rounds apart.
 */
async function benchmarkSqlGrowth(copies: number, databaseUrl: string, dataset: BeirDataset) {
  return withSqlIndexOnScratchDatabase(databaseUrl, async (sql, index, collectionId) => {
    const seconds = { writes: 0, packingRounds: 0, packingToTheEnd: 0 };
    let termsPacked = 0;
    const timed = async (phase: keyof typeof seconds, work: () => Promise<unknown>) => {
      const started = performance.now();
      await work();
      seconds[phase] += (performance.now() - started) / 1000;
    };
    const packingRound = async () => {
      termsPacked += (await packDueTerms(sql)).packed;
    };
    for (let copy = 0; copy < copies; copy++) {
      const entries = cranfieldCopy(dataset, copy);
      await insertChunkRows(sql, collectionId, entries);
      await timed('writes', () => index.add(collectionId, entries));
      await timed('packingRounds', packingRound);
    }
    const removedCopies = Array.from({ length: copies }, (_, copy) => copy).filter((copy) => copy % 5 === 4);
    for (const copy of removedCopies) {
      await timed('writes', () => index.remove(collectionId, cranfieldCopy(dataset, copy).map((entry) => entry.key)));
      await timed('packingRounds', packingRound);
    }
    await timed('packingToTheEnd', async () => {
      for (let packed = -1; packed !== 0; ) {
        ({ packed } = await packDueTerms(sql));
        termsPacked += packed;
      }
    });
    const [postings] = await sql<{ count: string; loose: string }>('select count(*) as count, count(*) filter (where not packed) as loose from keyword_postings');
    // Rounds with nothing due, the postings not packed left as growth leaves them (terms whose
    // changes are under a quarter of their packed postings): as packDueTerms looks for due terms,
    // the same after the tables are vacuumed and analyzed (the service's upkeep does that when
    // they are due), and as the service's packer skips such a round when nothing was written since.
    const timeRounds = async (round: () => Promise<unknown>) => {
      const latencies: number[] = [];
      for (let pass = 0; pass < 5; pass++) {
        const roundStarted = performance.now();
        await round();
        latencies.push(performance.now() - roundStarted);
      }
      return latencySummary(latencies);
    };
    const lookingForDueTerms = await timeRounds(() => packDueTerms(sql));
    await sql('vacuum analyze keyword_postings');
    const lookingAfterVacuum = await timeRounds(() => packDueTerms(sql));
    const packer = new KeywordPostingPacker(sql, createLogger('silent'), 0);
    await packer.packChangedTerms();
    const skipped = await timeRounds(() => packer.packChangedTerms());
    return {
      copies,
      removedCopies: removedCopies.length,
      chunks: (copies - removedCopies.length) * dataset.documents.length,
      postings: Number(postings!.count),
      postingsNotPacked: Number(postings!.loose),
      termsPacked,
      roundWithNothingDueMs: { lookingForDueTerms, lookingAfterVacuum, skipped },
      seconds: Object.fromEntries(Object.entries(seconds).map(([phase, value]) => [phase, round(value, 1)])),
    };
  });
}

const copies = Number(options.copies);
if (copies > 0 && !options['database-url']) throw new Error('--copies needs --database-url (or TEST_DATABASE_URL)');
const growthCopies = Number(options['growth-copies']);
if (growthCopies > 0 && !options['database-url']) throw new Error('--growth-copies needs --database-url (or TEST_DATABASE_URL)');
const dataset = await readBeirDataset(cranfieldFolder);
const targets: Array<[KeywordIndex['name'], string | undefined]> = [
  ['memory', undefined],
  ['sql', undefined],
  ...(options['database-url'] ? ([['sql', options['database-url']], ['memory', options['database-url']]] satisfies Array<[KeywordIndex['name'], string]>) : []),
];
const runs = [];
for (const [name, databaseUrl] of targets) {
  const run = await benchmarkCranfield(name, databaseUrl, dataset);
  runs.push(run);
  process.stdout.write(
    `${`${run.index}/${run.database}`.padEnd(18)} nDCG@10 ${run.ndcgAt10.toFixed(4)}  recall@100 ${run.recallAt100.toFixed(4)}  ` +
      `${run.matchesReference ? 'reproduced' : 'NOT reproduced'}  ingest ${run.ingest.chunksPerSecond} chunks/s  ` +
      `query p50 ${run.queryMs.p50} ms p95 ${run.queryMs.p95} ms\n`,
  );
  if (!run.matchesReference) process.exitCode = 1;
}
const scaleChunks = Number(options.scale);
const scale = scaleChunks > 0 ? await benchmarkMemoryAtScale(scaleChunks, dataset) : undefined;
if (scale) {
  const { fiveTermQueries, fullQueries, fullQueriesWithFilter } = scale.top10Ms;
  process.stdout.write(
    `memory at ${scale.chunks} chunks: ingest ${scale.ingest.chunksPerSecond} chunks/s; top 10, p50/p95: 5 terms ` +
      `${fiveTermQueries.p50}/${fiveTermQueries.p95} ms, full queries ${fullQueries.p50}/${fullQueries.p95} ms, ` +
      `with a filter ${fullQueriesWithFilter.p50}/${fullQueriesWithFilter.p95} ms\n`,
  );
}
const sqlAtScale = copies > 0 ? await benchmarkSqlAtScale(copies, options['database-url']!, dataset) : undefined;
if (sqlAtScale) {
  process.stdout.write(
    `sql/postgresql at ${sqlAtScale.chunks} chunks (${copies} copies): ingest ${sqlAtScale.ingest.chunksPerSecond} chunks/s; ` +
      `top 10, p50/p95 ${sqlAtScale.top10MsBeforePacking.p50}/${sqlAtScale.top10MsBeforePacking.p95} ms; ` +
      `packed ${sqlAtScale.packing.terms} terms in ${sqlAtScale.packing.seconds} s, then ${sqlAtScale.top10Ms.p50}/${sqlAtScale.top10Ms.p95} ms\n`,
  );
}
const sqlGrowth = growthCopies > 0 ? await benchmarkSqlGrowth(growthCopies, options['database-url']!, dataset) : undefined;
if (sqlGrowth) {
  process.stdout.write(
    `sql/postgresql growing to ${sqlGrowth.copies} copies, ${sqlGrowth.removedCopies} removed: writes ${sqlGrowth.seconds.writes} s, ` +
      `packing rounds ${sqlGrowth.seconds.packingRounds} s, packing to the end ${sqlGrowth.seconds.packingToTheEnd} s (${sqlGrowth.termsPacked} terms packed)\n` +
      `  then a round with nothing due (${sqlGrowth.postingsNotPacked} of ${sqlGrowth.postings} postings not packed), p50: ` +
      `${sqlGrowth.roundWithNothingDueMs.lookingForDueTerms.p50} ms looking, ${sqlGrowth.roundWithNothingDueMs.lookingAfterVacuum.p50} ms vacuumed, ` +
      `${sqlGrowth.roundWithNothingDueMs.skipped.p50} ms skipped\n`,
  );
}
const results = {
  generatedAt: new Date().toISOString(),
  // Other work on the machine inflates latencies; the load average says how busy it was.
  machine: { node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, loadAverage: os.loadavg().map((load) => round(load, 1)) },
  dataset: { name: 'cranfield', documents: dataset.documents.length, evaluatedQueries: dataset.evaluatedQueryIds.length },
  settings: { k1: 0.9, b: 0.4, topK, stem: 'porter', title: true },
  reference: { ...reference, tolerance, source: '/work/shared/tools/bm25_eval.py --stem' },
  runs,
  ...(scale ? { scale } : {}),
  ...(sqlAtScale ? { sqlAtScale } : {}),
  ...(sqlGrowth ? { sqlGrowth } : {}),
};
await writeFile(options.out, JSON.stringify(results, null, 2) + '\n');
process.stdout.write(`wrote ${options.out}\n`);
