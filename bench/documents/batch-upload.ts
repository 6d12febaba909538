/**
 * A batch of 1,000 small files in one multipart request (POST /documents/batch): how long the
 * upload takes (all files streamed to storage, 1,000 documents and jobs created), and how fast the
 * batch is then ingested until `GET .../batches/{id}/status` says done.
 *
 * The compiled service runs as its own process (bench/support/service-process.ts), on the embedded
 * database by default or on PostgreSQL with BENCH_DATABASE_URL (a database the bench may fill).
 *
 * Usage: npm run build && npx tsx bench/documents/batch-upload.ts [files=1000]
 * Writes bench/results/batch-upload-<pglite|postgresql>.json.
 */
import { fileURLToPath } from 'node:url';
import { bootstrapAdmin, machineDescription, startService, writeResult } from '../support/service-process.js';

const fileCount = Number(process.argv[2] ?? 1000);
const databaseUrl = process.env.BENCH_DATABASE_URL;
const backend = databaseUrl ? 'postgresql' : 'pglite';
const resultPath = fileURLToPath(new URL(`../results/batch-upload-${backend}.json`, import.meta.url));

const TOPICS = ['harbour', 'glacier', 'orchard', 'observatory', 'bakery', 'railway', 'library', 'vineyard', 'foundry', 'apiary'];

/** A ~2 KB note: a heading and a few paragraphs, unique by its number. */
function note(n: number): string {
  const topic = TOPICS[n % TOPICS.length]!;
  const paragraphs = Array.from({ length: 5 }, (_, index) =>
    `Note ${n}, part ${index}: the ${topic} team recorded observation ${n * 7 + index} and compared it with the previous season, `
    + `finding that schedules, staffing and weather explain most of the difference; reference code ${topic}-${n}-${index}.`);
  return `# ${topic} note ${n}\n\n${paragraphs.join('\n\n')}\n`;
}

function multipart(files: Array<{ filename: string; content: string }>): { body: Buffer; contentType: string } {
  const boundary = `----batch${Date.now()}`;
  const parts: Buffer[] = [];
  for (const file of files) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.filename}"\r\nContent-Type: text/markdown\r\n\r\n`));
    parts.push(Buffer.from(file.content), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

const service = await startService({ LOG_LEVEL: 'warn', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) });
try {
  const { key } = await bootstrapAdmin(service.baseUrl);
  const headers = { authorization: `Bearer ${key}` };
  const collectionName = `batch-${Date.now()}`;
  const created = await fetch(`${service.baseUrl}/v1/collections`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: collectionName }) });
  if (created.status !== 201) throw new Error(`collection: ${created.status}`);

  const { body, contentType } = multipart(Array.from({ length: fileCount }, (_, n) => ({ filename: `note-${n}.md`, content: note(n) })));
  const uploadStarted = performance.now();
  const response = await fetch(`${service.baseUrl}/v1/collections/${collectionName}/documents/batch`, { method: 'POST', headers: { ...headers, 'content-type': contentType }, body });
  const answer = await response.json() as { batch_id: string; documents: Array<{ status: string }> };
  const uploadSeconds = (performance.now() - uploadStarted) / 1000;
  if (response.status !== 202) throw new Error(`batch: ${response.status} ${JSON.stringify(answer).slice(0, 300)}`);

  let status: { done: boolean; by_status: Record<string, number> };
  for (;;) {
    status = await (await fetch(`${service.baseUrl}/v1/collections/${collectionName}/batches/${answer.batch_id}/status`, { headers })).json() as typeof status;
    if (status.done) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const totalSeconds = (performance.now() - uploadStarted) / 1000;
  const ingestSeconds = totalSeconds - uploadSeconds;
  const stats = await (await fetch(`${service.baseUrl}/v1/collections/${collectionName}/stats`, { headers })).json() as { chunks: number };

  const result = {
    benchmark: 'batch-upload',
    backend,
    files: fileCount,
    request_mib: Math.round((body.length / 1024 / 1024) * 100) / 100,
    upload_seconds: Math.round(uploadSeconds * 100) / 100,
    upload_files_per_second: Math.round(fileCount / uploadSeconds),
    ingest_seconds_after_upload: Math.round(ingestSeconds * 100) / 100,
    end_to_end_seconds: Math.round(totalSeconds * 100) / 100,
    documents_per_second_end_to_end: Math.round(fileCount / totalSeconds),
    chunks: stats.chunks,
    chunks_per_second_end_to_end: Math.round(stats.chunks / totalSeconds),
    by_status: status.by_status,
    machine: machineDescription(),
    measured_at: new Date().toISOString(),
  };
  await writeResult(resultPath, result);
} finally {
  await service.stop();
}
