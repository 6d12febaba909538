import { Migration } from '@mikro-orm/migrations';

/**
 * Two gaps of idempotency records (src/http/idempotency.ts).
 *
 * `rights_hash`: the rights (scopes and pin of an API key, role of a user) the caller had when it
 * first used an Idempotency-Key. A replay comes before the route checks a collection pin, so a key
 * pinned elsewhere since was still answered with the stored response. Records stored before have
 * none and are replayed as before; they are gone within 24 h.
 *
 * Stored answers of API key create and rotate held the plaintext key for 24 h, although the key is
 * otherwise kept only as a SHA-256 hash. Those already stored are given the shape new ones have.
 */
export class Migration0010IdempotencyRightsAndSecrets extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table idempotency_records add column rights_hash varchar(64) null');
    this.addSql(`
      update idempotency_records
      set response_body = (response_body::jsonb || '{"key": null, "key_shown_once": true}'::jsonb)::text
      where method = 'POST' and (path = '/v1/admin/api-keys' or path like '/v1/admin/api-keys/%/rotate')
        and response_status between 200 and 299
        -- CASE, so that no other body is ever cast (a condition's order is the planner's choice).
        and case when response_content_type like 'application/json%' and response_body <> ''
          then response_body::jsonb ->> 'key' is not null else false end`);
  }
}
