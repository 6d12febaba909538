import { DOCUMENT_STATUSES } from '../db/entities/index.js';
import { readVectorIndexCache } from '../db/vector-index-cache.js';
import type { AppServices } from '../services.js';

/**
 * Queries of the last 24 hours: the whole UTC hours after the one the day starts in from their
 * counts (migration 0025), the rest of that hour from its query events, so a busy day's events are
 * not counted on each request. The query events of that hour are there whatever
 * `QUERY_EVENTS_RETENTION_DAYS`, which is at least a day when set.
 */
const QUERIES_IN_THE_LAST_DAY = `(
  (select coalesce(sum(queries), 0) from query_hourly_totals where hour > date_trunc('hour', now() - interval '1 day', 'UTC'))
  + (select count(*) from query_events
      where created_at > now() - interval '1 day' and created_at < date_trunc('hour', now() - interval '1 day', 'UTC') + interval '1 hour'))`;

type InstanceStatsServices = Pick<AppServices, 'sql' | 'db' | 'jobs' | 'embeddingUsage' | 'embeddingCache' | 'settings' | 'indexes'>;

/** `GET /v1/stats`: counts and storage over every collection, the ingestion queue and the embedding use. */
export async function instanceStats(services: InstanceStatsServices) {
  const { sql } = services;
  type Counts = { collections: string | number; chunks: string | number; files: string | number; text: string | number; vectors: string | number; queries: string | number };
  // Storage as collection stats and /v1/usage count it (files, chunk text, float32 vectors); chunks from their totals (migration 0027).
  const [counts] = await sql<Counts>(
    `select (select count(*) from collections) as collections, stored.chunks, stored.text, stored.vectors,
            (select coalesce(sum(size_bytes), 0) from documents) as files,
            ${QUERIES_IN_THE_LAST_DAY} as queries
     from (select coalesce(sum(t.chunks), 0) as chunks, coalesce(sum(t.text_bytes), 0) as text, coalesce(sum(t.chunks * c.dimension * 4), 0) as vectors
           from collection_chunk_totals t join collections c on c.id = t.collection_id) as stored`,
  );
  const storage = { files_bytes: Number(counts?.files ?? 0), chunk_text_bytes: Number(counts?.text ?? 0), vector_bytes: Number(counts?.vectors ?? 0) };
  const byStatus = await sql<{ status: string; count: string | number }>('select status, count(*) as count from documents group by status');
  const documentsByStatus = Object.fromEntries(DOCUMENT_STATUSES.map((status) => [status, 0])) as Record<string, number>;
  for (const row of byStatus) documentsByStatus[row.status] = Number(row.count);
  const pending = await services.jobs.pendingCount();
  const embedding = {
    ...await services.embeddingUsage.total(),
    cache_enabled: await services.settings.get<boolean>('embedding_cache_enabled'),
    cache_entries: await services.embeddingCache.size(),
  };
  return {
    collections: Number(counts?.collections ?? 0),
    documents: Object.values(documentsByStatus).reduce((sum, count) => sum + count, 0),
    documents_by_status: documentsByStatus,
    chunks: Number(counts?.chunks ?? 0),
    storage_bytes: storage.files_bytes + storage.chunk_text_bytes + storage.vector_bytes,
    storage,
    queries_last_24h: Number(counts?.queries ?? 0),
    ingestion_queue: pending,
    database: services.db.kind,
    vector_store: services.indexes.vectorStore.name,
    keyword_index: services.indexes.keywordIndex.name,
    embedding,
    ...(services.db.kind === 'postgresql' && services.indexes.vectorStore.name === 'pgvector' ? { vector_index_cache: await readVectorIndexCache(sql) } : {}),
  };
}
