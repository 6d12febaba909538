import { Migration } from '@mikro-orm/migrations';

/**
 * Collections, documents and their chunks, the job queue, query events, and the tables of the
 * built-in search indexes: keyword postings (BM25 on PostgreSQL), pgvector embeddings, and the
 * embedded store's persisted vectors (PGlite). Kept to what PostgreSQL 15 accepts.
 */
export class Migration0002Retrieval extends Migration {
  override async up(): Promise<void> {
    this.addSql('create extension if not exists vector');

    this.addSql(`
      create table collections (
        id uuid primary key,
        name varchar(64) not null unique,
        description text null,
        embedding_preset_id uuid null,
        embedding_provider varchar(32) not null,
        embedding_model varchar(255) not null,
        embedding_base_url text null,
        embedding_api_key_sealed text null,
        dimension integer not null,
        chunk_size integer not null,
        chunk_overlap integer not null,
        chunk_strategy varchar(16) not null,
        tenant_field varchar(255) null,
        metadata_schema jsonb null,
        reranking_enabled boolean not null default false,
        reranking_model varchar(255) null,
        reranking_base_url text null,
        reranking_api_key_sealed text null,
        multimodal_enabled boolean not null default false,
        multimodal_enrichment_enabled boolean not null default false,
        default_top_k integer not null,
        default_min_score double precision not null,
        default_search_mode varchar(16) not null,
        metadata jsonb not null default '{}'::jsonb,
        write_version bigint not null default 0,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`);

    this.addSql(`
      create table documents (
        id uuid primary key,
        collection_id uuid not null references collections (id) on delete cascade,
        batch_id uuid null,
        filename varchar(1024) not null,
        content_type varchar(255) not null,
        size_bytes bigint not null,
        sha256 varchar(64) not null,
        storage_key text null,
        metadata jsonb not null default '{}'::jsonb,
        tenant text null,
        title text null,
        status varchar(16) not null,
        progress jsonb null,
        error text null,
        chunk_count integer not null default 0,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        processed_at timestamptz null
      )`);
    this.addSql('create index documents_collection_created_index on documents (collection_id, created_at desc)');
    this.addSql('create index documents_collection_status_index on documents (collection_id, status)');
    this.addSql('create index documents_collection_sha256_index on documents (collection_id, sha256)');

    this.addSql(`
      create table document_elements (
        id uuid primary key,
        document_id uuid not null references documents (id) on delete cascade,
        element_index integer not null,
        type varchar(32) not null,
        text text not null,
        heading_path jsonb not null default '[]'::jsonb,
        page integer null,
        metadata jsonb not null default '{}'::jsonb
      )`);
    this.addSql('create index document_elements_document_index on document_elements (document_id, element_index)');

    this.addSql(`
      create table chunks (
        key bigserial primary key,
        id varchar(255) not null,
        collection_id uuid not null references collections (id) on delete cascade,
        document_id uuid null references documents (id) on delete cascade,
        chunk_index integer not null,
        text text not null,
        metadata jsonb not null default '{}'::jsonb,
        tenant text null,
        created_at timestamptz not null,
        unique (collection_id, id)
      )`);
    this.addSql('create index chunks_document_index on chunks (document_id, chunk_index)');

    this.addSql(`
      create table jobs (
        id uuid primary key,
        kind varchar(32) not null,
        collection_id uuid null,
        document_id uuid null,
        payload jsonb not null default '{}'::jsonb,
        status varchar(16) not null,
        attempts integer not null default 0,
        max_attempts integer not null default 3,
        run_after timestamptz not null,
        locked_by varchar(128) null,
        locked_at timestamptz null,
        last_error text null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`);
    this.addSql('create index jobs_claim_index on jobs (status, run_after)');
    this.addSql('create index jobs_document_index on jobs (document_id)');

    this.addSql(`
      create table query_events (
        id uuid primary key,
        collection_id uuid null references collections (id) on delete cascade,
        query text not null,
        search_mode varchar(16) not null,
        result_count integer not null,
        latency_ms double precision not null,
        cached boolean not null default false,
        created_at timestamptz not null
      )`);
    this.addSql('create index query_events_collection_created_index on query_events (collection_id, created_at)');

    // BM25 postings for the SQL keyword index: the chunk length sits in every posting row, which
    // keeps scoring free of a join (5x faster in PGlite, ../shared/STACK.md).
    this.addSql(`
      create table keyword_postings (
        collection_id uuid not null,
        tenant text not null default '',
        term varchar(255) not null,
        chunk_key bigint not null,
        term_frequency integer not null,
        chunk_length integer not null
      )`);
    this.addSql('create index keyword_postings_term_index on keyword_postings (collection_id, tenant, term)');
    this.addSql('create index keyword_postings_chunk_index on keyword_postings (chunk_key)');
    this.addSql(`
      create table keyword_stats (
        collection_id uuid not null,
        tenant text not null default '',
        chunk_count bigint not null,
        total_length bigint not null,
        primary key (collection_id, tenant)
      )`);

    // pgvector store: one partial HNSW index per collection, created with the collection's dimension.
    this.addSql(`
      create table pgvector_embeddings (
        chunk_key bigint primary key,
        collection_id uuid not null,
        document_id uuid null,
        tenant text null,
        metadata jsonb not null default '{}'::jsonb,
        embedding vector not null
      )`);
    this.addSql('create index pgvector_embeddings_collection_index on pgvector_embeddings (collection_id, tenant)');

    // Embedded store: vectors persisted as base64 float32 (loads ~9x faster than bytea in PGlite).
    this.addSql(`
      create table embedded_vectors (
        chunk_key bigint primary key,
        collection_id uuid not null,
        embedding text not null
      )`);
    this.addSql('create index embedded_vectors_collection_index on embedded_vectors (collection_id)');
  }
}
