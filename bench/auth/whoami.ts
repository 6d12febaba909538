/**
 * Requests/s and latency of `GET /v1/auth/whoami` with an API key over a real port.
 * Run: npm run build && npx tsx bench/auth/whoami.ts   (writes bench/results/auth-whoami-<db>.json)
 * Set DATABASE_URL to measure on PostgreSQL instead of the embedded database.
 */
import { writeFile, mkdir } from 'node:fs/promises';
import autocannon from 'autocannon';
import { bootstrapAdmin, machineDescription, startService } from '../support/service-process.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 15);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

const service = await startService();
try {
  const { key } = await bootstrapAdmin(service.baseUrl);
  const request = { url: `${service.baseUrl}/v1/auth/whoami`, headers: { authorization: `Bearer ${key}` } };
  // Warm-up: JIT, caches, connection set-up.
  await autocannon({ ...request, connections: CONNECTIONS, duration: 3 });
  const result = await autocannon({ ...request, connections: CONNECTIONS, duration: DURATION_S });
  const summary = {
    benchmark: 'auth-whoami',
    database: process.env.DATABASE_URL ? 'postgresql' : 'pglite',
    date: new Date().toISOString(),
    machine: machineDescription(),
    connections: CONNECTIONS,
    duration_s: DURATION_S,
    requests_per_s: Math.round(result.requests.average),
    latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    non_2xx: result.non2xx,
    errors: result.errors,
    target_requests_per_s: 5000,
  };
  await mkdir('bench/results', { recursive: true });
  await writeFile(`bench/results/auth-whoami-${summary.database}.json`, `${JSON.stringify(summary, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} finally {
  await service.stop();
}
