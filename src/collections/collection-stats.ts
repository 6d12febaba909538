import type { CollectionRecord } from '../db/entities/index.js';
import { documentCountsByStatus } from '../documents/documents.service.js';
import type { SqlRunner } from '../plugins.js';
import type { SearchIndexes } from '../search/search-indexes.js';
import { mostAskedQueryLists } from '../search/query-daily-texts.js';
import { utcDay, utcDayWindowStart } from '../usage/utc-day-window.js';

export async function collectionStats(sql: SqlRunner, indexes: SearchIndexes, collection: CollectionRecord) {
  const byStatus = await documentCountsByStatus(sql, collection.id);
  const [documents] = await sql<{ files: string | number | null }>('select coalesce(sum(size_bytes), 0) as files from documents where collection_id = ?', [collection.id]);
  // Kept with every chunk write (migration 0027); no row until the collection's first chunk.
  const [chunks] = await sql<{ chunks: string | number; raw: string | number; text_bytes: string | number }>(
    'select chunks, raw_vectors as raw, text_bytes from collection_chunk_totals where collection_id = ?', [collection.id],
  );
  // Pending documents whose embedding provider is unavailable (IngestionWorker): how many, since when, and why.
  const [waiting] = await sql<{ documents: string | number; since: Date | string | null; error: string | null }>(
    `select count(*) as documents, min(provider_unavailable_since) as since, (array_agg(last_error order by updated_at desc))[1] as error
     from jobs where collection_id = ? and status = 'queued' and provider_unavailable_since is not null`, [collection.id],
  );
  const vectors = await indexes.vectorStore.count(collection.id);
  const rangeIndexes = await indexes.rangeIndexes?.describe(collection.id) ?? [];
  const fileBytes = Number(documents?.files ?? 0);
  const textBytes = Number(chunks?.text_bytes ?? 0);
  const vectorBytes = vectors * collection.dimension * 4;
  return {
    collection: collection.name,
    documents: Object.values(byStatus).reduce((sum, count) => sum + count, 0),
    documents_by_status: byStatus,
    waiting_for_provider: {
      documents: Number(waiting?.documents ?? 0),
      since: waiting?.since ? new Date(waiting.since).toISOString() : null,
      error: waiting?.error ?? null,
    },
    chunks: Number(chunks?.chunks ?? 0),
    raw_vectors: Number(chunks?.raw ?? 0),
    vectors,
    dimension: collection.dimension,
    storage_bytes: fileBytes + textBytes + vectorBytes,
    storage: { files_bytes: fileBytes, chunk_text_bytes: textBytes, vector_bytes: vectorBytes },
    range_indexes: rangeIndexes,
  };
}

/**
 * Queries of the last `windowDays` UTC days, today included, as the usage report counts them:
 * counts, latency and the per-day series from the daily totals, the top and zero-result query
 * lists from the daily counts of each query text (query-daily-texts.ts). Both are kept however long
 * the query events are.
 */
export async function collectionAnalytics(sql: SqlRunner, collection: CollectionRecord, windowDays: number) {
  const firstDay = utcDay(utcDayWindowStart(windowDays));
  const [summary] = await sql<{ total: string | number | null; latency: number | null; zero: string | number | null; cached: string | number | null }>(
    `select sum(queries) as total, sum(latency_ms_sum) as latency, sum(zero_result_queries) as zero, sum(cached_queries) as cached
     from query_daily_totals where collection_id = ? and day >= ?::date`, [collection.id, firstDay],
  );
  const perDay = await sql<{ day: string; queries: string | number; latency: number }>(
    `select to_char(day, 'YYYY-MM-DD') as day, queries, latency_ms_sum as latency
     from query_daily_totals where collection_id = ? and day >= ?::date order by day`, [collection.id, firstDay],
  );
  const lists = await mostAskedQueryLists(sql, collection.id, firstDay);
  const total = Number(summary?.total ?? 0);
  const round = (value: number | null | undefined) => Math.round((value ?? 0) * 100) / 100;
  return {
    collection: collection.name,
    window_days: windowDays,
    queries_total: total,
    avg_latency_ms: total > 0 ? round(Number(summary?.latency ?? 0) / total) : 0,
    zero_result_queries_total: Number(summary?.zero ?? 0),
    cache_hit_ratio: total > 0 ? round(Number(summary?.cached ?? 0) / total) : 0,
    queries_per_day: perDay.map((row) => ({
      date: `${row.day}T00:00:00.000Z`, queries: Number(row.queries), avg_latency_ms: round(Number(row.latency) / Number(row.queries)),
    })),
    top_queries: lists.top.map((listed) => ({ ...listed, avg_results: round(listed.avg_results) })),
    zero_result_queries: lists.zeroResult,
  };
}
