/**
 * A 500-page PDF through the public API of the started service: how fast one large PDF is parsed,
 * chunked, embedded and indexed, and how much memory the service needs for it.
 *
 * 1. Builds the PDF with pdf-lib (test/support/document-fixtures.ts): 500 Letter pages of
 *    Helvetica text, six ~200-character paragraphs a page under a 14 pt section heading, a 20 pt
 *    chapter heading every 10 pages, a picture on the first page.
 * 2. Parser alone, in this process: the `pdf` plugin on the same bytes (best of 2 runs, the first
 *    loads pdfjs), for pages/s without the database.
 * 3. End to end: starts the compiled service (bench/support/service-process.ts), creates an admin,
 *    an API key and a collection with the default chunking (800 / 100), uploads the file with a
 *    multipart POST, and polls GET /v1/collections/bench/documents/{id} until it is ready; reports
 *    pages/s and chunks/s from the upload to `ready`, the upload alone, and the service's resident
 *    memory before the upload (VmRSS) and at its peak (VmHWM).
 *
 * Run: npm run build && npx tsx bench/documents/large-pdf.ts
 *   DATABASE_URL=postgresql://...   PostgreSQL instead of the embedded database
 *   BENCH_PAGES=500                 pages in the PDF
 *   BENCH_QUIET_BUDGET_S=300        before timing, wait (at most this long) until other processes use < 0.3 cores
 * Writes bench/results/large-pdf.json (BENCH_OUT overrides).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pdfParserPlugin } from '../../plugins/parser/pdf/index.js';
import { buildPdf, type PdfPage } from '../../test/support/document-fixtures.js';
import { CpuMonitor, roundTo, waitForQuiet } from '../search/harness.js';
import { bootstrapAdmin, machineDescription, startService, writeResult } from '../support/service-process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PAGES = Number(process.env.BENCH_PAGES ?? 500);
const OUT = process.env.BENCH_OUT ?? path.join(root, 'bench/results/large-pdf.json');
const QUIET_BUDGET_S = Number(process.env.BENCH_QUIET_BUDGET_S ?? 300);
const log = (message: string) => process.stdout.write(`${message}\n`);

const sentences = [
  'The harbour pilots guide container ships through the narrow channel at high tide.',
  'Every vessel is logged by the lighthouse keeper together with the wind and visibility.',
  'Berths are assigned a day ahead, and the tug crews confirm them at dawn.',
  'Cargo manifests are checked against the customs declarations before unloading starts.',
  'Fog signals sound every thirty seconds whenever visibility drops below one mile.',
];

function pageContent(index: number): PdfPage {
  const paragraphs = Array.from({ length: 6 }, (_, paragraph) =>
    `Page ${index + 1}, paragraph ${paragraph + 1}. ${sentences[(index + paragraph) % sentences.length]} ${sentences[(index + paragraph + 2) % sentences.length]}`);
  return {
    ...(index % 10 === 0 ? { heading: `Chapter ${index / 10 + 1}: Harbour operations` } : {}),
    subheading: `Section ${index + 1}`,
    paragraphs,
    image: index === 0,
  };
}

/** Resident memory of a process in MiB (Linux /proc): `VmRSS` now, `VmHWM` the peak so far. */
function residentMib(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? roundTo(Number(match[1]) / 1024, 1) : Number.NaN;
}

async function parserAlone(data: Buffer) {
  const parser = pdfParserPlugin.create({}, {});
  const runs: number[] = [];
  let elements = 0;
  for (let run = 0; run < 2; run++) {
    const started = performance.now();
    const parsed = await parser.parse({ filename: 'large.pdf', contentType: 'application/pdf', data });
    runs.push(performance.now() - started);
    elements = parsed.elements.length;
  }
  const best = Math.min(...runs);
  return { elements, seconds: roundTo(best / 1000, 3), pages_per_s: roundTo(PAGES / (best / 1000), 1), first_run_s: roundTo(runs[0]! / 1000, 3) };
}

async function json<T>(response: Response, what: string): Promise<T> {
  if (!response.ok) throw new Error(`${what}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

async function main() {
  log(`building a ${PAGES}-page PDF`);
  const pdf = await buildPdf({ title: 'Harbour operations manual', pages: Array.from({ length: PAGES }, (_, index) => pageContent(index)) });
  log(`  ${(pdf.length / 1024 / 1024).toFixed(2)} MiB`);

  const databaseUrl = process.env.DATABASE_URL;
  const service = await startService(databaseUrl ? { DATABASE_URL: databaseUrl } : {});
  try {
    const ownPids = () => [process.pid, service.child.pid!];
    const quiet = await waitForQuiet(ownPids, 0.3, QUIET_BUDGET_S, log);
    log('parser alone (in this process)');
    const parser = await parserAlone(pdf);
    log(`  ${parser.pages_per_s} pages/s (${parser.seconds} s, ${parser.elements} elements)`);

    const { key } = await bootstrapAdmin(service.baseUrl);
    const headers = { authorization: `Bearer ${key}` };
    await json(await fetch(`${service.baseUrl}/v1/collections`, {
      method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench' }),
    }), 'create collection');

    log('end to end: upload, parse, chunk, embed, index');
    const rssBefore = residentMib(service.child.pid!, 'VmRSS');
    const cpu = new CpuMonitor(ownPids);
    const started = performance.now();
    const form = new FormData();
    form.append('file', new Blob([pdf], { type: 'application/pdf' }), 'large.pdf');
    const accepted = await json<{ id: string }>(await fetch(`${service.baseUrl}/v1/collections/bench/documents`, { method: 'POST', headers, body: form }), 'upload');
    const uploadSeconds = (performance.now() - started) / 1000;
    let document: { status: string; chunk_count: number; error: string | null };
    for (;;) {
      document = await json(await fetch(`${service.baseUrl}/v1/collections/bench/documents/${accepted.id}`, { headers }), 'document');
      if (document.status === 'ready' || document.status === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seconds = (performance.now() - started) / 1000;
    const cpuUse = cpu.end();
    if (document.status !== 'ready') throw new Error(`the document ended ${document.status}: ${document.error}`);
    const elements = await json<{ total: number }>(await fetch(`${service.baseUrl}/v1/collections/bench/documents/${accepted.id}/elements?limit=1`, { headers }), 'elements');
    const endToEnd = {
      seconds: roundTo(seconds, 3),
      upload_seconds: roundTo(uploadSeconds, 3),
      pages_per_s: roundTo(PAGES / seconds, 1),
      chunks: document.chunk_count,
      chunks_per_s: roundTo(document.chunk_count / seconds, 1),
      elements: elements.total,
      service_rss_before_mib: rssBefore,
      service_peak_rss_mib: residentMib(service.child.pid!, 'VmHWM'),
      cpu: cpuUse,
    };
    log(`  ${endToEnd.pages_per_s} pages/s, ${endToEnd.chunks_per_s} chunks/s (${endToEnd.chunks} chunks in ${endToEnd.seconds} s); service RSS ${endToEnd.service_rss_before_mib} MiB before, peak ${endToEnd.service_peak_rss_mib} MiB`);

    const result = {
      benchmark: 'large-pdf',
      date: new Date().toISOString(),
      database: databaseUrl ? 'postgresql' : 'pglite',
      machine: machineDescription(),
      quiet_wait: quiet,
      pdf: { pages: PAGES, bytes: pdf.length },
      parser_alone: parser,
      end_to_end: endToEnd,
    };
    await writeResult(OUT, result);
    log(`wrote ${path.relative(root, OUT)}`);
  } finally {
    await service.stop();
  }
}

await main();
