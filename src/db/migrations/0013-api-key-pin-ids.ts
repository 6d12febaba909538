import { Migration } from '@mikro-orm/migrations';

/**
 * An API key was pinned to a collection by name, so a key outlived the collection it was pinned
 * to and reached any later collection given the same name. The pin now also holds the
 * collection's id, and access requires the id of the collection a request resolves to.
 *
 * `on delete set null` rather than `cascade` (which would delete keys an admin may want to see)
 * or no foreign key: the row itself then says the pinned collection is gone, so a key whose
 * cached record is older than the delete is refused once it is read again, without a lookup;
 * and a key cannot be pinned to a collection that is deleted while the pin is being written.
 * A null id never unpins: a key is pinned when `collection` (the name) is set, and a pinned key
 * with a null id is refused (assertCollectionAccess, src/auth/actor.ts). No index on the
 * column: a collection delete scans api_keys, which holds admin-minted keys, not thousands.
 *
 * Existing pins take the id of the collection that has their name now, which is the one they
 * reached until now; a pin whose name no collection has keeps a null id and is refused from
 * now on, instead of waiting for someone to create a collection under that name.
 */
export class Migration0013ApiKeyPinIds extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table api_keys add column collection_id uuid null references collections (id) on delete set null');
    this.addSql('update api_keys set collection_id = collections.id from collections where collections.name = api_keys.collection');
  }
}
