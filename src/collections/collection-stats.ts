import type { CollectionRecord } from '../db/entities/index.js';
import { documentCountsByStatus } from '../documents/documents.service.js';
import type { SqlRunner } from '../plugins.js';
import type { SearchIndexes } from '../search/search-indexes.js';
import { DAY_MS, utcDayWindowStart } from '../usage/utc-day-window.js';

export async function collectionStats(sql: SqlRunner, indexes: SearchIndexes, collection: CollectionRecord) {
  const byStatus = await documentCountsByStatus(sql, collection.id);
  const [documents] = await sql<{ files: string | number | null }>('select coalesce(sum(size_bytes), 0) as files from documents where collection_id = ?', [collection.id]);
  const [chunks] = await sql<{ chunks: string | number; raw: string | number; text_bytes: string | number | null }>(
    `select count(*) as chunks, count(*) filter (where document_id is null) as raw, coalesce(sum(octet_length(text)), 0) as text_bytes
     from chunks where collection_id = ?`, [collection.id],
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

/** A query's text with its runs of white space made one space and its ends trimmed. */
const QUERY_TEXT = `btrim(regexp_replace(query, '\\s+', ' ', 'g'))`;
/**
 * Top and zero-result queries count "koala", "Koala" and " koala " as one query, as search reads
 * them alike, and show the form asked most often.
 */
const QUERY_AS_COUNTED = `lower(${QUERY_TEXT})`;
const QUERY_AS_SHOWN = `mode() within group (order by ${QUERY_TEXT})`;

/**
 * Queries of the last `windowDays` UTC days, today included, as the usage report counts them.
 * Counts, latency and the per-day series come from the daily totals, which are kept; the top and
 * zero-result query lists come from the query events, which are deleted after `retentionDays`
 * (0: kept), so they cover `top_queries_days`, the shorter of the window and the retention.
 */
export async function collectionAnalytics(sql: SqlRunner, collection: CollectionRecord, windowDays: number, retentionDays: number) {
  const now = Date.now();
  const windowStart = utcDayWindowStart(windowDays, new Date(now)).getTime();
  const firstDay = new Date(windowStart).toISOString().slice(0, 10);
  const [summary] = await sql<{ total: string | number | null; latency: number | null; zero: string | number | null; cached: string | number | null }>(
    `select sum(queries) as total, sum(latency_ms_sum) as latency, sum(zero_result_queries) as zero, sum(cached_queries) as cached
     from query_daily_totals where collection_id = ? and day >= ?::date`, [collection.id, firstDay],
  );
  const perDay = await sql<{ day: string; queries: string | number; latency: number }>(
    `select to_char(day, 'YYYY-MM-DD') as day, queries, latency_ms_sum as latency
     from query_daily_totals where collection_id = ? and day >= ?::date order by day`, [collection.id, firstDay],
  );
  const listedSince = new Date(retentionDays > 0 ? Math.max(windowStart, now - retentionDays * DAY_MS) : windowStart).toISOString();
  const listed = [collection.id, listedSince];
  const top = await sql<{ query: string; count: string | number; avg_results: number }>(
    `select ${QUERY_AS_SHOWN} as query, count(*) as count, avg(result_count) as avg_results from query_events
     where collection_id = ? and created_at >= ?::timestamptz group by ${QUERY_AS_COUNTED} order by count(*) desc, 1 limit 20`, listed,
  );
  const zero = await sql<{ query: string; count: string | number }>(
    `select ${QUERY_AS_SHOWN} as query, count(*) as count from query_events
     where collection_id = ? and created_at >= ?::timestamptz and result_count = 0 group by ${QUERY_AS_COUNTED} order by count(*) desc, 1 limit 20`, listed,
  );
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
    top_queries_days: retentionDays > 0 ? Math.min(windowDays, retentionDays) : windowDays,
    top_queries: top.map((row) => ({ query: row.query, count: Number(row.count), avg_results: round(row.avg_results) })),
    zero_result_queries: zero.map((row) => ({ query: row.query, count: Number(row.count) })),
  };
}
