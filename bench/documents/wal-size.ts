/**
 * What ingestion leaves in DATA_DIR on the embedded database, write-ahead log apart, with
 * EMBEDDED_CHECKPOINT_WAL_MB at each value given (0: checkpoints left to PGlite, whose max_wal_size
 * is 1GB). Each run starts the compiled service on a fresh DATA_DIR, uploads the same files (about
 * 27 KB of English-like text each, 50 a batch), waits until every document is ready, and records
 * the time, the largest `pg_wal` seen (sampled each second) and the sizes of `pg_wal`, the tables
 * (`db/base`) and the whole directory at the end.
 *
 * Usage: npm run build && npx tsx bench/documents/wal-size.ts [files=2000] [settings=0,64]
 * Writes bench/results/wal-size.json.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { documentText } from '../search/corpus.js';
import { bootstrapAdmin, machineDescription, startService, writeResult } from '../support/service-process.js';

const fileCount = Number(process.argv[2] ?? 2000);
const settings = (process.argv[3] ?? '0,64').split(',').map(Number);
const BATCH = 50;
/** Corpus documents (~2 KB each) joined into one file. */
const DOCUMENTS_PER_FILE = 13;
const resultPath = fileURLToPath(new URL('../results/wal-size.json', import.meta.url));

async function megabytes(directory: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(directory, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return Math.round(bytes / 1024 / 1024);
}

function fileText(file: number): string {
  return Array.from({ length: DOCUMENTS_PER_FILE }, (_, index) => documentText(file * DOCUMENTS_PER_FILE + index)).join('\n\n');
}

function batchBody(first: number, count: number): { body: Buffer; contentType: string } {
  const boundary = `----wal${first}`;
  const parts: Buffer[] = [];
  for (let file = first; file < first + count; file++) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="file-${file}.txt"\r\nContent-Type: text/plain\r\n\r\n`));
    parts.push(Buffer.from(fileText(file)), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function run(walMegabytes: number) {
  const service = await startService({ EMBEDDED_CHECKPOINT_WAL_MB: String(walMegabytes), MIN_FREE_DISK_MB: '0' });
  try {
    const walDirectory = path.join(service.dataDir, 'db', 'pg_wal');
    const { key } = await bootstrapAdmin(service.baseUrl);
    const headers = { authorization: `Bearer ${key}` };
    const created = await fetch(`${service.baseUrl}/v1/collections`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'corpus' }) });
    if (created.status !== 201) throw new Error(`collection: ${created.status}`);
    let originalBytes = 0;
    let largestWal = 0;
    const started = performance.now();
    for (let first = 0; first < fileCount; first += BATCH) {
      const { body, contentType } = batchBody(first, Math.min(BATCH, fileCount - first));
      originalBytes += body.length;
      const response = await fetch(`${service.baseUrl}/v1/collections/corpus/documents/batch`, { method: 'POST', headers: { ...headers, 'content-type': contentType }, body });
      if (response.status !== 202) throw new Error(`batch: ${response.status} ${(await response.text()).slice(0, 300)}`);
    }
    let stats: { chunks: number; documents_by_status: Record<string, number> };
    for (;;) {
      stats = await (await fetch(`${service.baseUrl}/v1/collections/corpus/stats`, { headers })).json() as typeof stats;
      largestWal = Math.max(largestWal, await megabytes(walDirectory));
      if (stats.documents_by_status.ready + stats.documents_by_status.failed === fileCount) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      embedded_checkpoint_wal_mb: walMegabytes,
      files: fileCount,
      original_mb: Math.round(originalBytes / 1024 / 1024),
      chunks: stats.chunks,
      failed: stats.documents_by_status.failed,
      seconds_until_ready: Math.round(seconds * 10) / 10,
      chunks_per_second_end_to_end: Math.round(stats.chunks / seconds),
      largest_pg_wal_mb: largestWal,
      pg_wal_mb: await megabytes(walDirectory),
      tables_mb: await megabytes(path.join(service.dataDir, 'db', 'base')),
      data_dir_mb: await megabytes(service.dataDir),
    };
  } finally {
    await service.stop();
  }
}

const runs = [];
for (const walMegabytes of settings) {
  const result = await run(walMegabytes);
  console.log(JSON.stringify(result));
  runs.push(result);
}
await writeResult(resultPath, { benchmark: 'wal-size', runs, machine: machineDescription(), measured_at: new Date().toISOString() });
