import { PeriodicWriter } from '../db/periodic-writer.js';
import type { SqlRunner } from '../plugins.js';
import { utcDay } from '../usage/utc-day-window.js';
import { embeddingCostUsd } from './rate-card.js';

export interface EmbeddingUsageEntry {
  collectionId: string;
  provider: string;
  model: string;
  /** Texts asked for, cached or not. */
  texts: number;
  /** Tokens the provider billed (0 when every text came from the cache). */
  tokens: number;
  cacheHits: number;
  cacheMisses: number;
}

export interface EmbeddingUsageSummary {
  tokens: number;
  cost_usd_estimate: number;
  texts: number;
  cache_hits: number;
  cache_misses: number;
  /** Share of texts answered from the cache, 0 when none were asked for. */
  cache_hit_ratio: number;
}

interface UsageRow {
  collection_id: string;
  provider: string;
  model: string;
  texts: string | number;
  tokens: string | number;
  cache_hits: string | number;
  cache_misses: string | number;
}

const ratio = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : 0);

/** Adds rows of possibly several models into one summary, pricing each model by the rate card. */
function summarize(rows: readonly UsageRow[]): EmbeddingUsageSummary {
  let tokens = 0;
  let cost = 0;
  let texts = 0;
  let hits = 0;
  let misses = 0;
  for (const row of rows) {
    tokens += Number(row.tokens);
    cost += embeddingCostUsd(row.provider, row.model, Number(row.tokens));
    texts += Number(row.texts);
    hits += Number(row.cache_hits);
    misses += Number(row.cache_misses);
  }
  return {
    tokens, cost_usd_estimate: Math.round(cost * 1e6) / 1e6, texts, cache_hits: hits, cache_misses: misses, cache_hit_ratio: ratio(hits, hits + misses),
  };
}

/** Counts waiting to be written, per collection, UTC day, provider and model. */
interface PendingUsage {
  collection_id: string;
  day: string;
  provider: string;
  model: string;
  texts: number;
  tokens: number;
  cache_hits: number;
  cache_misses: number;
}

/**
 * Embedding tokens and cache use per collection and UTC day. Calls are added up in memory and
 * written together once a second (before any read, and at shutdown): an upsert per call was a
 * statement on every query of a collection with a hosted model. A crash loses what was not written
 * yet (the last second, or more while the database refuses writes), and a write whose answer is
 * lost after it committed is counted again: the figures are an estimate of cost, not a bill.
 */
export class EmbeddingUsageLedger extends PeriodicWriter {
  private pending = new Map<string, PendingUsage>();

  constructor(private readonly sql: SqlRunner, onError: (error: unknown) => void = () => undefined) {
    super(1000, onError);
  }

  record(entry: EmbeddingUsageEntry): void {
    // The day of the call, not of the write, so that a call just before midnight counts for its day.
    const day = utcDay(new Date());
    this.add({
      collection_id: entry.collectionId, day, provider: entry.provider, model: entry.model,
      texts: entry.texts, tokens: entry.tokens, cache_hits: entry.cacheHits, cache_misses: entry.cacheMisses,
    });
  }

  /** Adds `counts` to what is pending for its collection, day and model. */
  private add(counts: PendingUsage): void {
    const key = JSON.stringify([counts.collection_id, counts.day, counts.provider, counts.model]);
    const pending = this.pending.get(key);
    if (!pending) {
      this.pending.set(key, { ...counts });
      return;
    }
    pending.texts += counts.texts;
    pending.tokens += counts.tokens;
    pending.cache_hits += counts.cache_hits;
    pending.cache_misses += counts.cache_misses;
  }

  protected async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.sql(
        `insert into embedding_usage (collection_id, day, provider, model, texts, tokens, cache_hits, cache_misses)
         select r.collection_id, r.day, r.provider, r.model, r.texts, r.tokens, r.cache_hits, r.cache_misses
         from jsonb_to_recordset(?::jsonb) as r(collection_id uuid, day date, provider text, model text, texts bigint, tokens bigint, cache_hits bigint, cache_misses bigint)
         on conflict (collection_id, day, provider, model) do update set
           texts = embedding_usage.texts + excluded.texts, tokens = embedding_usage.tokens + excluded.tokens,
           cache_hits = embedding_usage.cache_hits + excluded.cache_hits, cache_misses = embedding_usage.cache_misses + excluded.cache_misses`,
        [JSON.stringify([...batch.values()])],
      );
    } catch (error) {
      // Kept for the next write, together with the counts of calls made meanwhile.
      for (const counts of batch.values()) this.add(counts);
      throw error;
    }
  }

  private async rows(where: string, params: unknown[]): Promise<UsageRow[]> {
    await this.flushBeforeRead();
    return this.sql<UsageRow>(
      `select collection_id, provider, model, sum(texts) as texts, sum(tokens) as tokens, sum(cache_hits) as cache_hits, sum(cache_misses) as cache_misses
       from embedding_usage ${where} group by collection_id, provider, model`,
      params,
    );
  }

  /** Lifetime usage of one collection. */
  async forCollection(collectionId: string): Promise<EmbeddingUsageSummary> {
    return summarize(await this.rows('where collection_id = ?', [collectionId]));
  }

  /** Lifetime usage of the instance, deleted collections included. */
  async total(): Promise<EmbeddingUsageSummary> {
    return summarize(await this.rows('', []));
  }

  /** Usage since `since` (a UTC day start): in all, deleted collections included, and per collection id. */
  async since(since: Date): Promise<{ total: EmbeddingUsageSummary; perCollection: Map<string, EmbeddingUsageSummary> }> {
    const rows = await this.rows('where day >= ?::date', [utcDay(since)]);
    const byCollection = new Map<string, UsageRow[]>();
    for (const row of rows) byCollection.set(row.collection_id, [...(byCollection.get(row.collection_id) ?? []), row]);
    return { total: summarize(rows), perCollection: new Map([...byCollection].map(([id, collectionRows]) => [id, summarize(collectionRows)])) };
  }
}
