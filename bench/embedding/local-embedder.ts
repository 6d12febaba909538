/**
 * Throughput of the `local` embedding plugin on one core, in ~800-character chunks (the default
 * chunk size's order of magnitude). Target: >= 2,000 chunks/s, so embedding never becomes the
 * slow step of ingestion (the embedded database writes ~1,400 rows/s in bulk, /work/shared/STACK.md).
 *
 * Chunks are cut from the Cranfield abstracts (real technical English) on word boundaries.
 * The first pass runs with a cold stem cache; the reported figure is the median of the warm passes.
 * Writes bench/results/local-embedder.json.
 *
 * Usage: npx tsx bench/embedding/local-embedder.ts
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { localEmbeddingPlugin } from '../../plugins/embedding/local/index.js';
import { readBeirDataset } from '../quality/beir-dataset.js';

const targetChunkCharacters = 800;
const batchSize = 64;
const warmPasses = 5;
const targetChunksPerSecond = 2000;
const resultPath = fileURLToPath(new URL('../results/local-embedder.json', import.meta.url));

function cutIntoChunks(text: string, size: number): string[] {
  const chunks: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + size, text.length);
    const lastSpace = text.lastIndexOf(' ', end);
    if (end < text.length && lastSpace > start) end = lastSpace;
    chunks.push(text.slice(start, end).trim());
    start = end + 1;
  }
  return chunks.filter((chunk) => chunk.length > 0);
}

const dataset = await readBeirDataset('/work/shared/datasets/cranfield');
const allText = dataset.documents.map((document) => `${document.title}. ${document.text}`).join(' ');
const chunks = cutIntoChunks(allText, targetChunkCharacters);
const averageChunkCharacters = chunks.reduce((sum, chunk) => sum + chunk.length, 0) / chunks.length;

const model = localEmbeddingPlugin.create({}, {});

async function chunksPerSecondOfOnePass(): Promise<number> {
  const startedAt = performance.now();
  for (let offset = 0; offset < chunks.length; offset += batchSize) {
    await model.embed(chunks.slice(offset, offset + batchSize), 'document');
  }
  return chunks.length / ((performance.now() - startedAt) / 1000);
}

const coldChunksPerSecond = await chunksPerSecondOfOnePass();
const warmRuns: number[] = [];
for (let pass = 0; pass < warmPasses; pass++) warmRuns.push(await chunksPerSecondOfOnePass());
const sortedWarmRuns = [...warmRuns].sort((a, b) => a - b);
const medianChunksPerSecond = sortedWarmRuns[Math.floor(sortedWarmRuns.length / 2)];

const result = {
  benchmark: 'local-embedder',
  model: model.model,
  dimension: model.dimension,
  chunkCount: chunks.length,
  averageChunkCharacters: Math.round(averageChunkCharacters),
  batchSize,
  coldChunksPerSecond: Math.round(coldChunksPerSecond),
  warmChunksPerSecond: warmRuns.map(Math.round),
  medianChunksPerSecond: Math.round(medianChunksPerSecond),
  targetChunksPerSecond,
  meetsTarget: medianChunksPerSecond >= targetChunksPerSecond,
  node: process.version,
  measuredAt: new Date().toISOString(),
};
await mkdir(fileURLToPath(new URL('../results/', import.meta.url)), { recursive: true });
await writeFile(resultPath, JSON.stringify(result, null, 2) + '\n');
process.stdout.write(
  `${result.chunkCount} chunks of ~${result.averageChunkCharacters} chars, dimension ${result.dimension}: ` +
    `${result.medianChunksPerSecond} chunks/s (median of ${warmPasses} warm passes; cold ${result.coldChunksPerSecond}) ` +
    `target ${targetChunksPerSecond}: ${result.meetsTarget ? 'met' : 'NOT met'}\nwrote ${resultPath}\n`,
);
