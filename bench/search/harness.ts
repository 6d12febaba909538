/**
 * Process and HTTP plumbing for the search benchmark: the compiled service on a data directory
 * that outlives it (so the embedded database can be reopened by the benchmark after a stop, and
 * the service restarted on it), a fresh PostgreSQL database, a keep-alive JSON client with
 * sub-millisecond timing, uploads of the corpus, and percentile summaries.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort } from '../support/service-process.js';
import { documentText } from './corpus.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface RunningService {
  baseUrl: string;
  child: ChildProcess;
  /** SIGTERM, then waits for the exit; the data directory is left in place. */
  stop(): Promise<void>;
}


/**
 * Starts `dist/src/main.js` on `dataDir` (as bench/support/service-process.ts does, but reusing
 * the directory). `nodeArgs` go before the script, e.g. ['--cpu-prof', '--cpu-prof-dir=/tmp/x'].
 */
export async function startServiceAt(dataDir: string, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<RunningService> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'dist/src/main.js')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    try {
      if ((await fetch(`${baseUrl}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    if (attempt > 240) throw new Error('service did not answer /health within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    baseUrl, child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Corpus documents [first, first + count) in one POST .../documents/batch, with `metadata` for the
 * batch. Returns how many were duplicates of documents already stored (same text, skipped by the
 * default `on_duplicate`); a refused file throws.
 */
export async function uploadCorpusBatch(baseUrl: string, key: string, collection: string, first: number, count: number, metadata: Record<string, unknown> = {}): Promise<number> {
  const form = new FormData();
  form.append('metadata', JSON.stringify(metadata));
  for (let index = first; index < first + count; index++) {
    form.append('file', new Blob([documentText(index)], { type: 'text/plain' }), `doc-${String(index).padStart(6, '0')}.txt`);
  }
  const response = await fetch(`${baseUrl}/v1/collections/${collection}/documents/batch`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  if (response.status !== 202) throw new Error(`batch from ${first}: ${response.status} ${await response.text()}`);
  const { documents } = (await response.json()) as { documents: Array<{ id?: string; duplicate?: boolean }> };
  const refused = documents.filter((document) => !document.id);
  if (refused.length > 0) throw new Error(`batch from ${first}: ${refused.length} files refused: ${JSON.stringify(refused[0])}`);
  return documents.filter((document) => document.duplicate).length;
}

/** Drops and recreates the database named in `url` (connecting to the server's `postgres` database). */
export async function resetPostgresDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`refusing to drop database "${name}": not a plain identifier`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`drop database if exists ${name} with (force)`);
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
}

export interface TimedResponse<T> {
  status: number;
  body: T;
  milliseconds: number;
}

/** JSON over keep-alive HTTP/1.1 sockets (lighter than fetch, so the client steals less CPU). */
export class JsonClient {
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(baseUrl: string, private readonly key: string, sockets = 32) {
    this.url = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  }

  request<T = any>(method: string, pathname: string, body?: unknown): Promise<TimedResponse<T>> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const request = http.request({
        host: this.url.hostname, port: this.url.port, method, path: pathname, agent: this.agent,
        headers: {
          authorization: `Bearer ${this.key}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
      }, (response) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('end', () => {
          const milliseconds = performance.now() - started;
          const text = Buffer.concat(parts).toString('utf8');
          const status = response.statusCode ?? 0;
          if (status >= 400) {
            reject(new Error(`${method} ${pathname}: ${status} ${text.slice(0, 500)}`));
            return;
          }
          resolve({ status, body: (text ? JSON.parse(text) : null) as T, milliseconds });
        });
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface IngestionStats {
  chunks: number;
  documents_by_status: Record<string, number>;
}

/** Polls a collection's stats until no document is pending or processing, and returns them. */
export async function waitForIngestion(client: JsonClient, collection: string, pollMilliseconds = 500): Promise<IngestionStats> {
  for (;;) {
    const { body } = await client.request<IngestionStats>('GET', `/v1/collections/${encodeURIComponent(collection)}/stats`);
    if (!body.documents_by_status.pending && !body.documents_by_status.processing) return body;
    await new Promise((resolve) => setTimeout(resolve, pollMilliseconds));
  }
}

/** Corpus documents a batch when loading a collection, and batches in flight. */
export const LOAD_DOCUMENTS_PER_BATCH = 50;
const LOAD_UPLOADS_IN_FLIGHT = 4;

/**
 * Loads a collection with corpus documents 0 to `documents - 1` (LOAD_DOCUMENTS_PER_BATCH a batch,
 * 4 batches in flight) and waits until each is ready; throws when one is not.
 */
export async function loadCorpusDocuments(baseUrl: string, key: string, client: JsonClient, collection: string, documents: number): Promise<{ seconds: number; chunks: number }> {
  const started = performance.now();
  const batches = Math.ceil(documents / LOAD_DOCUMENTS_PER_BATCH);
  let next = 0;
  await Promise.all(Array.from({ length: LOAD_UPLOADS_IN_FLIGHT }, async () => {
    while (next < batches) {
      const batch = next++;
      const first = batch * LOAD_DOCUMENTS_PER_BATCH;
      await uploadCorpusBatch(baseUrl, key, collection, first, Math.min(LOAD_DOCUMENTS_PER_BATCH, documents - first), { batch });
    }
  }));
  const stats = await waitForIngestion(client, collection, 1000);
  if (stats.documents_by_status.ready !== documents) throw new Error(`${collection}: ${JSON.stringify(stats.documents_by_status)} after loading ${documents}`);
  return { seconds: (performance.now() - started) / 1000, chunks: stats.chunks };
}

export interface LatencySummary {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  max: number;
}

const round = (value: number, digits = 2) => Number(value.toFixed(digits));

export function percentile(sorted: ArrayLike<number>, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]!;
}

export function summarize(milliseconds: number[]): LatencySummary {
  const sorted = Float64Array.from(milliseconds).sort();
  const mean = milliseconds.reduce((sum, value) => sum + value, 0) / Math.max(1, milliseconds.length);
  return {
    count: milliseconds.length,
    p50: round(percentile(sorted, 0.5)),
    p95: round(percentile(sorted, 0.95)),
    p99: round(percentile(sorted, 0.99)),
    mean: round(mean),
    max: round(sorted[sorted.length - 1] ?? Number.NaN),
  };
}

/** p50 of each numeric field across records (stage timings). */
export function medianOfFields(records: readonly object[]): Record<string, number> {
  const fields = new Map<string, number[]>();
  for (const record of records) {
    for (const [name, value] of Object.entries(record)) {
      if (typeof value !== 'number') continue;
      let list = fields.get(name);
      if (!list) fields.set(name, (list = []));
      list.push(value);
    }
  }
  return Object.fromEntries([...fields].map(([name, values]) => [name, round(percentile(Float64Array.from(values).sort(), 0.5), 3)]));
}

export function roundTo(value: number, digits = 2): number {
  return round(value, digits);
}

// ---------- CPU accounting: how much of the machine other processes used during a phase ----------

function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((sum, value) => sum + value, 0);
  const idle = fields[3]! + fields[4]!;
  return { busy: total - idle, total };
}

function processTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the command.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

export interface CpuUse {
  seconds: number;
  /** Cores busy with processes other than the benchmark and the service (other work on the machine). */
  foreign_cores: number;
  /** Cores used by the benchmark process and the service. */
  own_cores: number;
}

/** Measures CPU use between `begin` and `end`; `ownPids` are the benchmark's processes. */
export class CpuMonitor {
  private startMachine = machineTicks();
  private startOwn = new Map<number, number>();
  private startedAt = performance.now();

  constructor(private readonly ownPids: () => number[]) {
    this.begin();
  }

  begin(): void {
    this.startMachine = machineTicks();
    this.startOwn = new Map(this.ownPids().map((pid) => [pid, processTicks(pid)]));
    this.startedAt = performance.now();
  }

  /** Own processes that ended meanwhile cannot be read any more: their share counts as foreign. */
  end(): CpuUse {
    const machine = machineTicks();
    let ownDelta = 0;
    for (const pid of this.ownPids()) ownDelta += Math.max(0, processTicks(pid) - (this.startOwn.get(pid) ?? 0));
    const cores = os.cpus().length;
    const totalDelta = Math.max(1, machine.total - this.startMachine.total);
    const busyDelta = machine.busy - this.startMachine.busy;
    return {
      seconds: round((performance.now() - this.startedAt) / 1000),
      foreign_cores: round(Math.min(cores, Math.max(0, ((busyDelta - ownDelta) / totalDelta) * cores))),
      own_cores: round(Math.min(cores, (ownDelta / totalDelta) * cores)),
    };
  }
}

/**
 * Waits (up to `maxWaitSeconds`) until other processes use less than `maxForeignCores` over a
 * 2-second sample, so that timed phases do not share the 2 cores with someone else's tests.
 * Returns the seconds waited and the last sample.
 */
export async function waitForQuiet(ownPids: () => number[], maxForeignCores: number, maxWaitSeconds: number, log: (message: string) => void): Promise<{ waited_s: number; foreign_cores: number }> {
  const started = performance.now();
  let announced = false;
  for (;;) {
    const monitor = new CpuMonitor(ownPids);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const use = monitor.end();
    const waited = (performance.now() - started) / 1000;
    if (use.foreign_cores <= maxForeignCores || waited >= maxWaitSeconds) {
      if (use.foreign_cores > maxForeignCores) log(`  machine still busy (${use.foreign_cores} foreign cores) after ${Math.round(waited)} s; measuring anyway`);
      return { waited_s: round(waited), foreign_cores: use.foreign_cores };
    }
    if (!announced) log(`  waiting for other processes to go quiet (${use.foreign_cores} cores busy elsewhere)`);
    announced = true;
  }
}
