import { Migration } from '@mikro-orm/migrations';

/**
 * GIN indexes over chunk metadata, where PostgreSQL reads filters: `chunks` (the SQL keyword
 * index's filtered queries) and `pgvector_embeddings` (the pgvector store). A filter's equality and
 * membership conditions also go to SQL as containment (`metadata @> ...`, filter-to-sql.ts), which
 * these indexes serve, so rows passing a selective filter are found without testing every row of
 * the collection. jsonb_path_ops: only `@>` is asked of them, and its entries are a hash per path
 * and value, smaller than jsonb_ops's.
 *
 * At 115k chunks (bench/search/filtered-queries.ts, bench/README.md "Metadata filters"), a semantic
 * query with a filter 0.17 % of chunks pass took 4.9 ms p50 against 92 ms without them, and with one
 * no chunk passes 6.9 against 267 ms. Without them, pgvector's HNSW scan walked the graph until
 * enough rows passed (up to 20,000 rows), then an exact search tested the filter on every row of the
 * collection; with them, the planner reads the passing rows from the index and ranks them exactly.
 */
export class Migration0018MetadataContainmentIndexes extends Migration {
  override async up(): Promise<void> {
    this.addSql('create index chunks_metadata_index on chunks using gin (metadata jsonb_path_ops)');
    // Written straight into the index, without GIN's list of pending entries: the service's upkeep
    // never vacuums this table (its HNSW indexes, postgres-table-upkeep.ts), so with autovacuum off
    // the list would grow to gin_pending_list_limit (4 MB) and every filtered query would read it.
    // Measured on 20,000 rows of six metadata keys: 38 µs a row written straight, against about
    // 1.4 ms an insert with HNSW live (bench/README.md "Metadata filters").
    this.addSql(`create index pgvector_embeddings_metadata_index on pgvector_embeddings using gin (metadata jsonb_path_ops)
      with (fastupdate = off)`);
  }
}
