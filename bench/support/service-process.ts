import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServiceProcess {
  baseUrl: string;
  dataDir: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * Starts the compiled service (`npm run build` first) as its own process, as `npm start` would,
 * on a free port with a fresh data directory, so benchmarks measure the real server over TCP.
 */
export async function startService(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const port = await freePort();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-bench-'));
  const child = spawn(process.execPath, [path.join(root, 'dist/src/main.js')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 120; attempt++) {
    try {
      if ((await fetch(`${baseUrl}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    baseUrl, dataDir, child,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Creates the first admin and an API key; returns the key's plaintext and the session cookie. */
/** The admin every benchmark creates on a fresh service. */
const benchAdmin = { email: 'bench@example.com', password: 'benchmark password' };

/** Creates the first admin on a fresh service and an API key for it (`keyBody` is the key's request body). */
export async function bootstrapAdmin(baseUrl: string, keyBody: Record<string, unknown> = { name: 'bench' }): Promise<{ key: string; cookie: string }> {
  const cookie = await sessionCookie(baseUrl, '/v1/auth/setup', 201);
  return { key: await createApiKey(baseUrl, cookie, keyBody), cookie };
}

/**
 * Waits until the embedded store's graphs hold every row written (GET /v1/admin/vector-storage,
 * admin session): semantic search scans exactly while many rows await the graph, so latencies
 * measured before would not be the settled service's. Returns the seconds waited.
 */
export async function graphsSettled(baseUrl: string, cookie: string): Promise<number> {
  const started = performance.now();
  for (;;) {
    const response = await fetch(`${baseUrl}/v1/admin/vector-storage?limit=500`, { headers: { cookie } });
    if (!response.ok) throw new Error(`vector storage overview failed: ${response.status} ${await response.text()}`);
    const { data } = (await response.json()) as { data: Array<{ memory_index?: { rows_awaiting_graph?: number } }> };
    if (data.every((entry) => (entry.memory_index?.rows_awaiting_graph ?? 0) === 0)) return Math.round(performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Logs in as the admin an earlier run created (its data kept) and creates a new API key. */
export async function keyOfEarlierAdmin(baseUrl: string): Promise<string> {
  return createApiKey(baseUrl, await sessionCookie(baseUrl, '/v1/auth/login', 200), { name: `bench ${Date.now()}` });
}

async function sessionCookie(baseUrl: string, pathname: string, expectedStatus: number): Promise<string> {
  const response = await fetch(`${baseUrl}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(benchAdmin) });
  if (response.status !== expectedStatus) throw new Error(`${pathname} failed: ${response.status} ${await response.text()}`);
  return (response.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
}

async function createApiKey(baseUrl: string, cookie: string, keyBody: Record<string, unknown>): Promise<string> {
  const created = await fetch(`${baseUrl}/v1/admin/api-keys`, {
    method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify(keyBody),
  });
  if (created.status !== 201) throw new Error(`key creation failed: ${created.status}`);
  return ((await created.json()) as { key: string }).key;
}

/** The machine a result was measured on, with its load when asked (other processes skew every figure). */
export function machineDescription() {
  return {
    node: process.version, cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model ?? 'unknown', memory_gib: Math.round(os.totalmem() / 2 ** 30),
    load_average: os.loadavg().map((load) => Math.round(load * 100) / 100),
  };
}

/**
 * A JSON call to the service with an API key (`json` becomes the body); throws on a 4xx or 5xx,
 * so a benchmark never measures error answers.
 */
export async function callService(baseUrl: string, key: string, pathname: string, init: RequestInit & { json?: unknown } = {}): Promise<any> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${baseUrl}${pathname}`, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body ?? null });
  if (response.status >= 400) throw new Error(`${init.method ?? 'GET'} ${pathname}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

/** Writes a result file (creating its folder) and prints the result. */
export async function writeResult(file: string, result: unknown): Promise<void> {
  const text = `${JSON.stringify(result, null, 2)}\n`;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  process.stdout.write(text);
}
