import { Migration } from '@mikro-orm/migrations';

/** Embedding presets, the embedding cache and usage accounting (issue 5). */
export class Migration0004Providers extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table embedding_presets (
        id uuid primary key,
        name varchar(255) not null unique,
        provider varchar(32) not null,
        model varchar(255) not null,
        base_url text null,
        api_key_sealed text null,
        dimension integer not null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`);

    // Keyed by a hash of what makes a vector (provider, model, dimension, base URL, document or
    // query) and of the text; vectors as base64 float32, as in embedded_vectors.
    this.addSql(`
      create table embedding_cache (
        model_key varchar(64) not null,
        text_hash varchar(64) not null,
        embedding text not null,
        created_at timestamptz not null,
        primary key (model_key, text_hash)
      )`);

    // One row per collection, day and model. No foreign key: tokens billed for a collection that
    // was deleted since still count in the instance totals.
    this.addSql(`
      create table embedding_usage (
        collection_id uuid not null,
        day date not null,
        provider varchar(32) not null,
        model varchar(255) not null,
        texts bigint not null default 0,
        tokens bigint not null default 0,
        cache_hits bigint not null default 0,
        cache_misses bigint not null default 0,
        primary key (collection_id, day, provider, model)
      )`);
  }
}
