import type { SqlRunner } from '../plugins.js';

export interface QueryEvent {
  collectionId: string;
  query: string;
  searchMode: string;
  resultCount: number;
  latencyMs: number;
  cached: boolean;
  at: Date;
}

/**
 * Records queries for analytics without a write on the query path: events are buffered and
 * inserted together once a second (and before analytics are read, and at shutdown).
 */
export class QueryEventRecorder {
  private buffer: QueryEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly sql: SqlRunner, private readonly onError: (error: unknown) => void) {}

  start(): void {
    this.timer ??= setInterval(() => void this.flush().catch(this.onError), 1000);
    this.timer.unref();
  }

  record(event: QueryEvent): void {
    this.buffer.push(event);
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.buffer.length === 0) return;
    const events = this.buffer;
    this.buffer = [];
    await this.sql(
      `insert into query_events (id, collection_id, query, search_mode, result_count, latency_ms, cached, created_at)
       select gen_random_uuid(), r.collection_id, r.query, r.search_mode, r.result_count, r.latency_ms, r.cached, r.created_at
       from jsonb_to_recordset(?::jsonb) as r(collection_id uuid, query text, search_mode text, result_count int, latency_ms float8, cached boolean, created_at timestamptz)
       where exists (select 1 from collections c where c.id = r.collection_id)`,
      [JSON.stringify(events.map((event) => ({
        collection_id: event.collectionId, query: event.query.slice(0, 2000), search_mode: event.searchMode,
        result_count: event.resultCount, latency_ms: event.latencyMs, cached: event.cached, created_at: event.at.toISOString(),
      })))],
    );
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
