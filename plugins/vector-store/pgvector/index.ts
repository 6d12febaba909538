/**
 * The `pgvector` vector store: vectors in `pgvector_embeddings` (an untyped `vector` column shared
 * by every collection), one partial HNSW index per collection on `embedding::vector(<dim>)`, so
 * collections of different dimensions live side by side and each index holds only its collection.
 * Default on PostgreSQL; on PGlite it works but inserts ~130 rows/s (HNSW maintenance in WASM
 * costs ~7 ms a row, /work/shared/STACK.md), which is why PGlite defaults to `embedded`.
 */
import { vectorSearchSessionSettings } from '../../../src/db/database.js';
import { ConflictError, ServiceUnavailableError, UnprocessableError } from '../../../src/errors.js';
import type { PluginDefinition, SqlRunner, VectorHit, VectorRecord, VectorStorageDetails, VectorSearchRequest, VectorStore } from '../../../src/plugins.js';
import { CollectionEstimates, CollectionRowCounts, ColumnStatistics } from '../../../src/db/planner-estimates.js';
import { isUuid } from '../../../src/db/uuid-pattern.js';
import { containmentSql, filterToSql } from '../../../src/search/filters/filter-to-sql.js';

const indexNamePattern = /^pgvector_hnsw_[0-9a-f]{32}_[0-9]{1,5}$/;
/** pgvector's `vector` type holds up to 16,000 dimensions; its HNSW index up to 2,000. */
const maxVectorDimension = 16_000;
const maxIndexedDimension = 2_000;
/** Vectors a deletion must remove before an emptied collection's HNSW index is made again: below, the dead entries cost little. */
const emptiedIndexRebuildRows = 1_000;
/**
 * ef_search 100 measured recall@10 0.94 at 2.7 ms p95 in PGlite vs 0.92 at 40 (STACK.md); it must
 * also be at least topK, and pgvector caps it at 1,000. Every connection of the service's database
 * starts with ef_search 100 and iterative scans (src/db/database.ts vectorSearchSessionSettings),
 * so a search up to 100 results is a single statement.
 */
const minimumEfSearch = Number(vectorSearchSessionSettings['hnsw.ef_search']);
const maximumEfSearch = 1_000;
/**
 * Rows per insert statement. On PGlite every row costs ~7 ms of index maintenance, so 100 rows
 * hold its single connection ~0.7 s; PostgreSQL (339 rows/s indexed) takes bigger statements.
 */
const insertBatchRows = { pglite: 100, postgresql: 500 } as const;
/**
 * A filter whose equalities the planner expects at most this x sqrt(topK x the collection's chunks)
 * rows to pass is ranked exactly, through the GIN index over metadata, without trying the HNSW scan
 * first (see search). The HNSW scan reads about topK / share rows, the exact ranking every passing
 * one, so the two cross where the passing rows grow with sqrt(topK x chunks), as in the embedded
 * store (`indexedCandidatesScale`). At 115k chunks, a filter 10 % pass (11.5k rows): ranked exactly
 * in 15.4 ms at any depth, against 9-10 ms through the HNSW scan for a top 10 and 33 ms for
 * hybrid's 50-deep list; so the factor lies between 4.8 and 10.7 there.
 */
const exactFilteredScale = 6;

export interface PgvectorStoreOptions {
  /**
   * Write only the vectors whose `chunks` row exists (see upsert). The plugin, which the service
   * uses, sets it; bench/search/vector-stores.ts measures the store alone, without chunk rows.
   */
  onlyVectorsOfLiveChunks?: boolean;
}

/** Deterministic, so a retried ensureCollection finds the index it created (52 chars < 63). */
export function hnswIndexName(collectionId: string, dimension: number): string {
  return `pgvector_hnsw_${collectionId.replaceAll('-', '').toLowerCase()}_${dimension}`;
}

function checkCollectionId(collectionId: string): void {
  if (!isUuid(collectionId)) throw new UnprocessableError(`collection id must be a uuid, got ${JSON.stringify(collectionId)}`);
}

function checkDimension(dimension: number): void {
  if (!Number.isInteger(dimension) || dimension < 1 || dimension > maxVectorDimension) {
    throw new UnprocessableError(`vector dimension must be an integer from 1 to ${maxVectorDimension}, got ${dimension}`);
  }
}

function vectorLiteral(embedding: Float32Array): string {
  return `[${embedding.join(',')}]`;
}

/**
 * The index exists already: another process (a replica truncating or creating the same
 * collection) made it between our `if not exists` check and our catalog insert, which PostgreSQL
 * then refuses as a duplicate pg_class name (23505) or, later in the race, a duplicate relation
 * (42P07). The refusal comes once the other creation committed, so the index is there.
 */
function isIndexMadeElsewhere(error: unknown): boolean {
  const { code, constraint, message } = (error ?? {}) as { code?: unknown; constraint?: unknown; message?: unknown };
  if (code === '42P07') return true;
  return code === '23505' && (constraint === 'pg_class_relname_nsp_index' || String(message).includes('pg_class_relname_nsp_index'));
}

export class PgvectorStore implements VectorStore {
  readonly name = 'pgvector';
  /** Set on every connection the service opens (src/db/database.ts); a search for more results raises ef_search to top_k. */
  readonly settings = { ef_search: minimumEfSearch, iterative_scan: vectorSearchSessionSettings['hnsw.iterative_scan'] };
  /** Filled by ensureCollection; search falls back to the query's length (same index expression). */
  private readonly dimensions = new Map<string, number>();
  /**
   * Index creations in flight: two concurrent `create index if not exists` race on PostgreSQL.
   * Across processes the loser's refusal counts as success (isIndexMadeElsewhere).
   */
  private readonly creatingIndexes = new Map<string, Promise<void>>();

  private readonly onlyVectorsOfLiveChunks: boolean;
  private readonly collectionRows: CollectionRowCounts;
  private readonly metadataStatistics: ColumnStatistics;
  private readonly filterEstimates: CollectionEstimates;

  constructor(private readonly sql: SqlRunner, options: PgvectorStoreOptions = {}) {
    this.onlyVectorsOfLiveChunks = options.onlyVectorsOfLiveChunks ?? false;
    this.collectionRows = new CollectionRowCounts(sql);
    this.metadataStatistics = new ColumnStatistics(sql, 'pgvector_embeddings', 'metadata');
    this.filterEstimates = new CollectionEstimates(sql);
  }

  async ensureCollection(collectionId: string, dimension: number): Promise<void> {
    checkCollectionId(collectionId);
    checkDimension(dimension);
    const known = this.dimensions.get(collectionId);
    if (known !== undefined && known !== dimension) {
      throw new ConflictError(`collection ${collectionId} holds ${known}-dimensional vectors, not ${dimension}`);
    }
    // Above 2,000 dimensions HNSW cannot index `vector`: searches scan the collection exactly.
    if (dimension <= maxIndexedDimension) await this.createIndexOnce(collectionId, dimension);
    this.dimensions.set(collectionId, dimension);
  }

  /**
   * The vector literals are written into the SQL text rather than bound: the runner inlines bound
   * values through MikroORM's formatQuery, whose character-by-character escaping costs ~3x on
   * megabyte-sized statements (measured on the embedded store's base64 batches). A literal made
   * by `vectorLiteral` holds only digits, signs, '.', 'e', ',', brackets (and NaN/Infinity, which
   * pgvector refuses); no quote or '|', the separator. Keys are checked to be integers.
   *
   * With onlyVectorsOfLiveChunks, a vector whose chunk row is gone is not written: a document
   * deleted while its chunks were indexed otherwise left orphan vectors until the ingestion's
   * clean-up after the whole slice (~14 s for 4,096 chunks with HNSW on PostgreSQL), and a
   * top_k of 10 answered with 1 result meanwhile. The rows are held with KEY SHARE for the
   * statement, so a deletion arriving now waits for it and then removes these vectors with the
   * rows' other entries (document-removal.ts); SKIP LOCKED passes over rows a deletion holds
   * already (deletes take FOR UPDATE; a chunk update takes NO KEY UPDATE, which KEY SHARE does not
   * wait for), so the upsert never waits for a deletion and the two cannot deadlock.
   */
  async upsert(records: VectorRecord[]): Promise<void> {
    const batchRows = insertBatchRows[this.sql.dialect];
    for (let start = 0; start < records.length; start += batchRows) {
      const batch = records.slice(start, start + batchRows);
      const keys = batch.map((record) => record.key);
      if (!keys.every(Number.isSafeInteger)) throw new UnprocessableError('vector keys must be integers');
      const keyArray = `'{${keys.join(',')}}'::bigint[]`;
      await this.sql(
        `${this.onlyVectorsOfLiveChunks ? `with live_chunks as (select key from chunks where key = any(${keyArray}) for key share skip locked)` : ''}
         insert into pgvector_embeddings (chunk_key, collection_id, document_id, tenant, metadata, embedding)
         select chunk_key, collection_id, document_id, tenant, metadata::jsonb, embedding::vector
         from unnest(${keyArray}, ?::uuid[], ?::uuid[], ?::text[], ?::text[],
                     string_to_array('${batch.map((record) => vectorLiteral(record.embedding)).join('|')}', '|'))
           as row(chunk_key, collection_id, document_id, tenant, metadata, embedding)
         ${this.onlyVectorsOfLiveChunks ? 'where chunk_key in (select key from live_chunks)' : ''}
         on conflict (chunk_key) do update set collection_id = excluded.collection_id, document_id = excluded.document_id,
           tenant = excluded.tenant, metadata = excluded.metadata, embedding = excluded.embedding`,
        [
          batch.map((record) => record.collectionId),
          batch.map((record) => record.documentId),
          batch.map((record) => record.tenant),
          batch.map((record) => JSON.stringify(record.metadata)),
        ],
      );
    }
  }

  /**
   * A deletion that leaves the collection empty (a truncate) makes its HNSW index again, empty: the
   * old one keeps every deleted vector until VACUUM, and searches and inserts walk them meanwhile.
   */
  async delete(collectionId: string, keys: number[]): Promise<void> {
    if (keys.length === 0) return;
    const [deleted] = await this.sql<{ count: number | string }>(
      'with gone as (delete from pgvector_embeddings where collection_id = ? and chunk_key = any(?::bigint[]) returning 1) select count(*) as count from gone',
      [collectionId, keys],
    );
    this.collectionRows.forget(collectionId);
    this.filterEstimates.forget(collectionId);
    const dimension = this.dimensions.get(collectionId);
    if (Number(deleted!.count) < emptiedIndexRebuildRows || dimension === undefined || dimension > maxIndexedDimension) return;
    const [left] = await this.sql<{ found: boolean }>('select exists (select 1 from pgvector_embeddings where collection_id = ?) as found', [collectionId]);
    if (left!.found) return;
    await this.dropIndexes(collectionId);
    await this.ensureCollection(collectionId, dimension);
  }

  async dropCollection(collectionId: string): Promise<void> {
    checkCollectionId(collectionId);
    await this.dropIndexes(collectionId);
    await this.sql('delete from pgvector_embeddings where collection_id = ?', [collectionId]);
    this.dimensions.delete(collectionId);
    this.collectionRows.forget(collectionId);
    this.filterEstimates.forget(collectionId);
  }

  private async dropIndexes(collectionId: string): Promise<void> {
    const prefix = hnswIndexName(collectionId, 0).slice(0, -1);
    const indexes = await this.sql<{ indexname: string }>(
      "select indexname from pg_indexes where tablename = 'pgvector_embeddings' and starts_with(indexname, ?)",
      [prefix],
    );
    for (const { indexname } of indexes) {
      if (indexNamePattern.test(indexname)) await this.sql(`drop index if exists ${indexname}`);
    }
    // Forgotten after the drop, not before: two truncates of one collection in this process, the
    // other's creation remembered between a clear and this drop made this truncate's own creation
    // a no-op, and the collection was left without an index.
    for (const name of [...this.creatingIndexes.keys()]) if (name.startsWith(prefix)) this.creatingIndexes.delete(name);
  }

  async search(request: VectorSearchRequest): Promise<VectorHit[]> {
    const dimension = this.dimensions.get(request.collectionId) ?? request.embedding.length;
    checkDimension(dimension);
    if (request.embedding.length !== dimension) {
      throw new UnprocessableError(`collection ${request.collectionId} holds ${dimension}-dimensional vectors; got ${request.embedding.length} dimensions`);
    }
    if (request.topK <= 0) return [];
    const conditions = ['collection_id = ?'];
    const conditionParams: unknown[] = [request.collectionId];
    if (request.tenant !== undefined && request.tenant !== null) {
      conditions.push('tenant = ?');
      conditionParams.push(request.tenant);
    }
    if (request.filter) {
      const filter = filterToSql(request.filter, 'metadata');
      conditions.push(`(${filter.sql})`);
      conditionParams.push(...filter.params);
    }
    if (request.keys) {
      conditions.push('chunk_key = any(?::bigint[])');
      conditionParams.push(request.keys);
    }
    // Ordered by the same expression as the index, so the planner can use it; the materialised CTE
    // then restores exact order, which relaxed_order iterative scans do not guarantee (pgvector 0.8).
    const scored = `select chunk_key, embedding::vector(${dimension}) <=> ?::vector(${dimension}) as distance
        from pgvector_embeddings where ${conditions.join(' and ')}`;
    const nearestSql = `with nearest as materialized (${scored} order by distance limit ?)
      select chunk_key, distance from nearest order by distance + 0, chunk_key`;
    // Ordered by `distance + 0`, which no index serves: exact, in one statement.
    const exactSql = `select chunk_key, distance from (${scored}) as scored order by distance + 0, chunk_key limit ?`;
    const params = [vectorLiteral(request.embedding), ...conditionParams, request.topK];
    const efSearch = Math.min(maximumEfSearch, Math.max(minimumEfSearch, request.topK));

    type NearestRow = { chunk_key: number | string; distance: number };
    const toHits = (rows: NearestRow[]) => rows.map((row) => ({ key: Number(row.chunk_key), score: 1 - Number(row.distance) }));
    // Listed keys are few (a few documents' chunks), and so are the rows of a filter that few pass:
    // they are ranked exactly.
    if (request.keys !== undefined || await this.fewPassFilter(request)) return toHits(await this.sql<NearestRow>(exactSql, params));
    // Up to 100 results the connection's own settings serve: one statement.
    if (efSearch === minimumEfSearch) {
      const approximate = await this.sql<NearestRow>(nearestSql, params);
      if (approximate.length >= request.topK) return toHits(approximate);
    }
    const rows = await this.sql.transaction(async (sql) => {
      if (efSearch > minimumEfSearch) {
        await sql("select set_config('hnsw.ef_search', ?, true)", [String(efSearch)]);
        const approximate = await sql<NearestRow>(nearestSql, params);
        if (approximate.length >= request.topK) return approximate;
      }
      // Short: the scan stopped at hnsw.max_scan_tuples (20,000) before finding topK allowed rows,
      // or the collection holds fewer. Without the index the same query is exact.
      await sql('set local enable_indexscan = off');
      return sql<NearestRow>(nearestSql, params);
    });
    return toHits(rows);
  }

  /**
   * Whether the planner expects few rows to pass the filter's equalities (its containment, which the
   * GIN index over metadata serves; migration 0018). pgvector costs its HNSW scan as if a filter
   * cost nothing to satisfy, so which plan won turned on the estimates: a filter 1 % of 115k chunks
   * pass took 6.0 ms one day, through the GIN index, and 65-69 ms on a fresh load of the same
   * documents, through the graph (bench/README.md, "Metadata filters"). The estimate of the
   * containment alone was good there (1,141 rows for 1,150). Only once the table has statistics
   * (the upkeep's or autovacuum's ANALYZE): before, the planner's default expected 1 row of any
   * filter, and a wide one would be ranked exactly, row by row. PostgreSQL only: PGlite keeps none.
   */
  private async fewPassFilter(request: VectorSearchRequest): Promise<boolean> {
    if (!request.filter || this.sql.dialect !== 'postgresql') return false;
    const containment = containmentSql(request.filter, 'metadata');
    if (containment === null || !await this.metadataStatistics.present()) return false;
    const tenant = request.tenant ?? null;
    const expected = await this.filterEstimates.rows(
      request.collectionId,
      `select 1 from pgvector_embeddings where collection_id = ?${tenant === null ? '' : ' and tenant = ?'} and ${containment.sql}`,
      [request.collectionId, ...(tenant === null ? [] : [tenant]), ...containment.params],
    );
    const rows = await this.collectionRows.rows(request.collectionId);
    return expected <= exactFilteredScale * Math.sqrt(request.topK * Math.max(rows, 1));
  }

  async count(collectionId: string): Promise<number> {
    const rows = await this.sql<{ count: number | string }>('select count(*) as count from pgvector_embeddings where collection_id = ?', [collectionId]);
    return Number(rows[0].count);
  }

  async describe(collectionId: string): Promise<VectorStorageDetails> {
    return { vectors: await this.count(collectionId) };
  }

  async close(): Promise<void> {
    // The database belongs to the service; nothing of ours stays open.
  }

  private createIndexOnce(collectionId: string, dimension: number): Promise<void> {
    const name = hnswIndexName(collectionId, dimension);
    let creating = this.creatingIndexes.get(name);
    if (!creating) {
      // Identifiers and the partial-index predicate cannot be bound: both were validated above.
      creating = this.sql(
        `create index if not exists ${name} on pgvector_embeddings
         using hnsw ((embedding::vector(${dimension})) vector_cosine_ops)
         where collection_id = '${collectionId.toLowerCase()}'`,
      ).then(() => undefined, (error: unknown) => {
        // Two replicas truncating one collection at once: one answered 500 (this map is per process).
        if (!isIndexMadeElsewhere(error)) throw error;
      });
      this.creatingIndexes.set(name, creating);
      // Kept once created: re-issuing `create index if not exists` per batch cost ~22 ms and a
      // SHARE lock that blocked concurrent inserts. Forgotten on failure and on dropCollection.
      void creating.catch(() => this.creatingIndexes.delete(name));
    }
    return creating;
  }
}

export const pgvectorStorePlugin: PluginDefinition<'vector-store'> = {
  kind: 'vector-store',
  name: 'pgvector',
  description: 'pgvector in the service database: one partial HNSW index per collection, filters in SQL',
  create(_config, deps) {
    if (!deps.sql) throw new ServiceUnavailableError('the pgvector store needs the service database (deps.sql)');
    return new PgvectorStore(deps.sql, { onlyVectorsOfLiveChunks: true });
  },
};
