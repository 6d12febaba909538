import type { EmbeddingUsageLedger, EmbeddingUsageSummary } from '../embedding/embedding-usage.js';
import type { SqlRunner } from '../plugins.js';
import { DAY_MS, utcDay, utcDayWindowStart } from './utc-day-window.js';

type Count = string | number;

const round2 = (value: number) => Math.round(value * 100) / 100;

interface QueryStats {
  queries: number;
  latencySum: number;
}

const averageLatency = (stats: QueryStats | undefined) => (stats && stats.queries > 0 ? round2(stats.latencySum / stats.queries) : 0);

/**
 * The usage report of spec 2.9. The window is the last `windowDays` UTC days, today included:
 * queries, their latency and embedding tokens (with their rate-card cost) are counted in it;
 * documents, chunks and storage are lifetime totals. `by_collection` lists every collection, idle
 * ones included (api-contract 5); the totals also count tokens of collections deleted since.
 * With `onlyCollectionId` (a pinned API key) the report covers that collection alone.
 */
export async function usageReport(sql: SqlRunner, ledger: EmbeddingUsageLedger, windowDays: number, onlyCollectionId?: string) {
  const since = utcDayWindowStart(windowDays);
  // A pinned key's report reads its collection's rows only, not every chunk of the instance.
  const only = onlyCollectionId ? { condition: 'collection_id = ?', params: [onlyCollectionId] } : { condition: 'true', params: [] };
  const collections = await sql<{ id: string; name: string; dimension: number }>(
    `select id, name, dimension from collections ${onlyCollectionId ? 'where id = ?' : ''} order by name`, only.params,
  );
  const documents = await sql<{ collection_id: string; documents: Count; bytes: Count }>(
    `select collection_id, count(*) as documents, coalesce(sum(size_bytes), 0) as bytes from documents where ${only.condition} group by collection_id`, only.params,
  );
  // Each collection's chunk totals, kept with every chunk write (migration 0027).
  const chunks = await sql<{ collection_id: string; chunks: Count; bytes: Count }>(
    `select collection_id, chunks, text_bytes as bytes from collection_chunk_totals where ${only.condition}`, only.params,
  );
  // The daily totals (migration 0021), kept after the events themselves are deleted.
  const queries = await sql<{ collection_id: string; day: string; queries: Count; latency: number | null }>(
    `select collection_id, to_char(day, 'YYYY-MM-DD') as day, queries, latency_ms_sum as latency
     from query_daily_totals where day >= ?::date and ${only.condition}`, [utcDay(since), ...only.params],
  );
  const embedding = await ledger.since(since);

  const documentsBy = new Map(documents.map((row) => [row.collection_id, row]));
  const chunksBy = new Map(chunks.map((row) => [row.collection_id, row]));
  const included = new Set(collections.map((collection) => collection.id));
  const queriesBy = new Map<string, QueryStats>();
  const queriesByDay = new Map<string, QueryStats>();
  for (const row of queries) {
    if (!included.has(row.collection_id)) continue;
    for (const [map, key] of [[queriesBy, row.collection_id], [queriesByDay, row.day]] as const) {
      const stats = map.get(key) ?? { queries: 0, latencySum: 0 };
      stats.queries += Number(row.queries);
      stats.latencySum += Number(row.latency ?? 0);
      map.set(key, stats);
    }
  }

  const noUsage: EmbeddingUsageSummary = { tokens: 0, cost_usd_estimate: 0, texts: 0, cache_hits: 0, cache_misses: 0, cache_hit_ratio: 0 };
  const byCollection = collections.map((collection) => {
    const chunkRow = chunksBy.get(collection.id);
    const chunkCount = Number(chunkRow?.chunks ?? 0);
    const usage = embedding.perCollection.get(collection.id) ?? noUsage;
    const stats = queriesBy.get(collection.id);
    return {
      collection: collection.name,
      documents: Number(documentsBy.get(collection.id)?.documents ?? 0),
      chunks: chunkCount,
      // Original files, chunk text, and float32 vectors (one per chunk).
      storage_bytes: Number(documentsBy.get(collection.id)?.bytes ?? 0) + Number(chunkRow?.bytes ?? 0) + chunkCount * collection.dimension * 4,
      embedding_tokens: usage.tokens,
      embedding_cost_usd_estimate: usage.cost_usd_estimate,
      queries: stats?.queries ?? 0,
      avg_latency_ms: averageLatency(stats),
    };
  });

  const timeline = Array.from({ length: windowDays }, (_, index) => {
    const date = new Date(since.getTime() + index * DAY_MS);
    const stats = queriesByDay.get(utcDay(date));
    return { date: date.toISOString(), queries: stats?.queries ?? 0, avg_latency_ms: averageLatency(stats) };
  });
  const all = [...queriesBy.values()].reduce((sum, stats) => ({ queries: sum.queries + stats.queries, latencySum: sum.latencySum + stats.latencySum }), { queries: 0, latencySum: 0 });
  const tokens = onlyCollectionId ? byCollection.reduce((sum, row) => sum + row.embedding_tokens, 0) : embedding.total.tokens;
  const cost = onlyCollectionId ? byCollection.reduce((sum, row) => sum + row.embedding_cost_usd_estimate, 0) : embedding.total.cost_usd_estimate;
  return {
    window_days: windowDays,
    queries_total: all.queries,
    queries_per_day_avg: round2(all.queries / windowDays),
    documents_total: byCollection.reduce((sum, row) => sum + row.documents, 0),
    chunks_total: byCollection.reduce((sum, row) => sum + row.chunks, 0),
    storage_bytes_total: byCollection.reduce((sum, row) => sum + row.storage_bytes, 0),
    embedding_tokens_total: tokens,
    embedding_cost_usd_estimate: Math.round(cost * 1e6) / 1e6,
    avg_latency_ms: averageLatency(all),
    timeline,
    by_collection: byCollection,
  };
}
