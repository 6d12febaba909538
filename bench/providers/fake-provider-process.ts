/**
 * The provider fake of the tests (test/support/provider-fakes.ts) in a process of its own, so that
 * its 50 ms answers are not delayed by the service's work on the main thread (PGlite runs there).
 * Started with `fork`; answers `{port}` once listening, `{maxInFlight, requests}` to 'stats', and
 * takes `{latencyMs}` to change its delay.
 */
import { startProviderFake } from '../../test/support/provider-fakes.js';

const latencyMs = Number(process.argv[2] ?? 50);
// One vector for every text, computed once per dimension: a provider's own work is in its latency.
const vectors = new Map<number, number[]>();
const vectorOf = (_text: string, dimension: number) => {
  if (!vectors.has(dimension)) vectors.set(dimension, Array.from({ length: dimension }, (_, index) => Number(Math.sin(index + 1).toPrecision(8))));
  return vectors.get(dimension)!;
};
const fake = await startProviderFake({ apiKey: process.argv[3] ?? 'bench-key', latencyMs, vectorOf });
const port = Number(new URL(fake.baseUrl('cohere')).port);
process.send?.({ port });
process.on('message', (message) => {
  if (message === 'reset') {
    fake.reset();
    process.send?.({ reset: true });
  }
  if (message === 'stats') process.send?.({ maxInFlight: fake.maxInFlight, requests: fake.requests.length });
  if (typeof message === 'object' && message !== null && 'latencyMs' in message) {
    fake.latencyMs = Number(message.latencyMs);
    process.send?.({ latencySet: fake.latencyMs });
  }
});
process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
