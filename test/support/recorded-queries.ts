import type { TestApp } from './test-app.js';

/**
 * Records each query of `queries` (text, result count) at `at`, as the query path does, and writes
 * them to the database together, as the recorder's next round would.
 */
export async function recordQueries(
  services: TestApp['services'],
  collectionId: string,
  queries: Array<[query: string, resultCount: number]>,
  at: Date,
  latencyMs = 2,
): Promise<void> {
  for (const [query, resultCount] of queries) {
    services.queryRuntime.events.record({ collectionId, query, searchMode: 'hybrid', resultCount, latencyMs, cached: false, at });
  }
  await services.queryRuntime.events.flushBeforeRead();
}
