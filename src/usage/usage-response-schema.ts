/** The documented usage report of spec 2.9, as usageReport (usage-report.ts) builds it. */
import { Type } from 'typebox';

const Count = Type.Integer({ minimum: 0 });
const AverageLatency = Type.Number({ minimum: 0, description: 'mean query latency in milliseconds; 0 without queries' });

const UsageDay = Type.Object({
  date: Type.String({ format: 'date-time', description: 'the start of the UTC day' }),
  queries: Count,
  avg_latency_ms: AverageLatency,
}, { additionalProperties: false });

const CollectionUsage = Type.Object({
  collection: Type.String(),
  documents: Count,
  chunks: Count,
  storage_bytes: Type.Integer({ minimum: 0, description: 'original files, chunk text and float32 vectors' }),
  embedding_tokens: Count,
  embedding_cost_usd_estimate: Type.Number({ minimum: 0 }),
  queries: Count,
  avg_latency_ms: AverageLatency,
}, { additionalProperties: false });

/**
 * Queries, latency and embedding tokens are counted in the window (the last `window_days` UTC days,
 * today included); documents, chunks and storage are lifetime totals.
 */
export const UsageReport = Type.Object({
  window_days: Type.Integer({ minimum: 1 }),
  queries_total: Count,
  queries_per_day_avg: Type.Number({ minimum: 0 }),
  documents_total: Count,
  chunks_total: Count,
  storage_bytes_total: Count,
  embedding_tokens_total: Type.Integer({ minimum: 0, description: 'for the whole instance, also of collections deleted since; for a pinned key, of its collection' }),
  embedding_cost_usd_estimate: Type.Number({ minimum: 0 }),
  avg_latency_ms: AverageLatency,
  timeline: Type.Array(UsageDay, { description: 'one entry per day of the window, oldest first' }),
  by_collection: Type.Array(CollectionUsage, { description: 'every collection, idle ones included; a pinned key\'s alone' }),
}, { additionalProperties: false });
