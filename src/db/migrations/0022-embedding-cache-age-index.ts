import { Migration } from '@mikro-orm/migrations';

/**
 * The embedding cache's oldest vectors are deleted first when it outgrows `EMBEDDING_CACHE_MAX_MB`
 * (embedding-cache-bound.ts): this index finds them without sorting the whole cache.
 */
export class Migration0022EmbeddingCacheAgeIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql('create index embedding_cache_created_index on embedding_cache (created_at, model_key, text_hash)');
  }
}
