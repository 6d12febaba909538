/**
 * The floor under the service's query latency: a bare Fastify process (no hooks, no
 * authentication, no database) that answers the query route with a response the service gave,
 * re-serialized on every request as the service does. Measured with the same client and the same
 * requests as the service, its p50 is what HTTP, Fastify and the client cost on this machine before
 * the service does anything; `service p50 - direct p50 - floor p50` is what the service adds.
 *
 * Run as a child process: `node --import tsx http-floor.ts <port> <bodies.json>`, where bodies.json
 * maps each search mode to a response body; it prints "ready" on stdout when listening.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { freePort } from '../support/service-process.js';

export interface FloorServer {
  baseUrl: string;
  stop(): Promise<void>;
}

/** Starts the floor server answering each mode's query with `bodies[mode]`. */
export async function startHttpFloor(bodies: Record<string, unknown>, workDirectory: string): Promise<FloorServer> {
  const file = path.join(workDirectory, 'http-floor-bodies.json');
  await writeFile(file, JSON.stringify(bodies));
  const port = await freePort();
  const child = fork(fileURLToPath(import.meta.url), [String(port), file], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => { if (chunk.toString().includes('ready')) resolve(); });
    child.once('exit', (code) => reject(new Error(`HTTP floor server exited with ${code}`)));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [port, file] = process.argv.slice(2);
  const bodies = JSON.parse(readFileSync(file!, 'utf8')) as Record<string, unknown>;
  const app = Fastify({ logger: false });
  app.post('/v1/collections/:name/query', async (request) => bodies[(request.body as { search_mode: string }).search_mode]);
  await app.listen({ port: Number(port), host: '127.0.0.1' });
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}
