/**
 * Package questions over real README files, through the public API, with and without
 * `rerank: true` (the collection's `local` reranker), in every search mode: hit@1 and MRR of the
 * right package (readme-questions.ts). Each README is uploaded as a Markdown file into a collection
 * with default settings, so it is chunked as a user's would be; a package counts at the rank of
 * its best chunk. The service stores byte-identical files once (the four MikroORM packages share
 * one README), so `readmes_indexed` can be below `readmes`. Between runs the semantic first stage
 * can differ by a question or two (uploads go 8 at a time, so the vector index is built in a
 * different order), so compare first stage and reranked within one run.
 *
 * Run: npm run build && npx tsx bench/quality/readme-quality.ts [node_modules folder] [--dimension=N]
 * Writes bench/results/quality-readmes-rerank-<database>.json. DATABASE_URL measures PostgreSQL.
 * With --dimension the collection's vectors have N dimensions (the file name ends in `-dimension-N`).
 */
import { readFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bootstrapAdmin, callService, machineDescription, startService } from '../support/service-process.js';
import { dimensionArgument, dimensionSuffix } from './dimension-argument.js';
import { answerRank, findReadmeFiles, PACKAGE_QUESTIONS } from './readme-questions.js';

const nodeModules = process.argv.slice(2).find((argument) => !argument.startsWith('--')) ?? path.resolve('node_modules');
const dimension = dimensionArgument(process.argv);
const readmes = await findReadmeFiles(nodeModules);
const service = await startService();
const CONCURRENCY = 8;
/** The collection default, so the reranker reads 30 candidates, as in the probe. */
const TOP_K = 10;

const api = (pathname: string, init: RequestInit & { json?: unknown }, key: string) => callService(service.baseUrl, key, pathname, init);

try {
  const { key } = await bootstrapAdmin(service.baseUrl);
  await api('/v1/collections', { method: 'POST', json: { name: 'readmes', ...(dimension ? { dimension } : {}) } }, key);
  const ingestStart = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < readmes.length) {
      const readme = readmes[next++]!;
      const form = new FormData();
      form.append('metadata', JSON.stringify({ package: readme.packageName }));
      form.append('file', new Blob([await readFile(readme.file)], { type: 'text/markdown' }), `${readme.packageName.replace('/', '__')}.md`);
      await api('/v1/collections/readmes/documents', { method: 'POST', body: form }, key);
    }
  }));
  let stats;
  for (;;) {
    stats = await api('/v1/collections/readmes/stats', {}, key);
    if (stats.documents_by_status.pending + stats.documents_by_status.processing === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const ingestSeconds = (performance.now() - ingestStart) / 1000;

  async function evaluate(options: Record<string, unknown>) {
    let hits = 0;
    let reciprocalRanks = 0;
    const rerankTimes: number[] = [];
    const ranks: Array<number | null> = [];
    for (const { question, answers } of PACKAGE_QUESTIONS) {
      const response = await api('/v1/collections/readmes/query', { method: 'POST', json: { query: question, top_k: TOP_K, skip_cache: true, ...options } }, key);
      if (response.timings.rerank_ms !== undefined) rerankTimes.push(response.timings.rerank_ms);
      const rank = answerRank((response.results as Array<{ metadata: { package: string } }>).map((result) => result.metadata.package), answers);
      ranks.push(rank ?? null);
      if (rank === 1) hits += 1;
      if (rank !== undefined) reciprocalRanks += 1 / rank;
    }
    rerankTimes.sort((a, b) => a - b);
    const count = PACKAGE_QUESTIONS.length;
    return {
      hit_at_1: Math.round((hits / count) * 1000) / 1000,
      mrr_at_10: Math.round((reciprocalRanks / count) * 1000) / 1000,
      ...(rerankTimes.length > 0 ? { rerank_ms_p50: rerankTimes[Math.floor(rerankTimes.length / 2)]! } : {}),
      ranks,
    };
  }

  const modes: Record<string, unknown> = {};
  for (const mode of ['keyword', 'semantic', 'hybrid']) {
    modes[mode] = { first_stage: await evaluate({ search_mode: mode }), reranked: await evaluate({ search_mode: mode, rerank: true }) };
  }
  const summary = {
    benchmark: 'quality-readmes',
    database: process.env.DATABASE_URL ? 'postgresql' : 'pglite',
    date: new Date().toISOString(),
    machine: machineDescription(),
    readmes: readmes.length,
    readmes_indexed: stats.documents_by_status.ready,
    chunks: stats.chunks,
    questions: PACKAGE_QUESTIONS.map(({ question }) => question),
    top_k: TOP_K,
    reranker: 'local',
    ingest_seconds: Math.round(ingestSeconds * 10) / 10,
    ...(dimension ? { dimension } : {}),
    modes,
  };
  await mkdir('bench/results', { recursive: true });
  await writeFile(`bench/results/quality-readmes-rerank-${summary.database}${dimensionSuffix(dimension)}.json`, `${JSON.stringify(summary, null, 2)}\n`);
  const brief = Object.fromEntries(Object.entries(modes as Record<string, Record<string, { hit_at_1: number; mrr_at_10: number }>>)
    .map(([mode, runs]) => [mode, Object.fromEntries(Object.entries(runs).map(([run, figures]) => [run, { hit_at_1: figures.hit_at_1, mrr_at_10: figures.mrr_at_10 }]))]));
  process.stdout.write(`${JSON.stringify(brief, null, 2)}\n`);
} finally {
  await service.stop();
}
