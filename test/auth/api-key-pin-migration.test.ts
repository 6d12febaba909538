/**
 * Migration 0013: keys pinned by name before it get the id of the collection holding that name;
 * a key pinned to a name no collection has is refused from then on, also once one is created.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { randomToken, sha256Hex } from '../../src/crypto/tokens.js';
import { Migration0013ApiKeyPinIds } from '../../src/db/migrations/0013-api-key-pin-ids.js';
import { assertError } from '../support/assertions.js';
import { adminTestApp, bearer, createTestCollection, testBackends } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    const kept = await createTestCollection(app, admin, { name: 'kept' });

    // The table as it was before 0013, and keys written into it as the service wrote them then.
    await services.sql('alter table api_keys drop column collection_id');
    const insertOldKey = async (collection: string | null) => {
      const key = `svc_sk_${randomToken(32)}`;
      const id = randomUUID();
      await services.sql(
        `insert into api_keys (id, name, prefix, key_hash, scopes, collection, active, created_at, updated_at)
         values (?, ?, ?, ?, '["*:*"]'::jsonb, ?, true, now(), now())`,
        [id, `pinned to ${collection}`, key.slice(0, 12), sha256Hex(key), collection],
      );
      return { id, key };
    };
    const toKept = await insertOldKey('kept');
    const toGone = await insertOldKey('gone');
    const unpinned = await insertOldKey(null);

    const migration = new Migration0013ApiKeyPinIds(services.db.orm.em.getDriver(), services.db.orm.config);
    await migration.up();
    for (const statement of migration.getQueries()) await services.sql(String(statement));

    const pinIds = new Map((await services.sql<{ id: string; collection_id: string | null }>('select id, collection_id from api_keys')).map((row) => [row.id, row.collection_id]));
    t.equal(pinIds.get(toKept.id), kept.id, 'a pin to an existing collection gets its id');
    t.equal(pinIds.get(toGone.id), null, 'a pin to a missing collection gets none');
    t.equal(pinIds.get(unpinned.id), null, 'an unpinned key stays unpinned');

    const query = (collection: string, key: string) =>
      app.inject({ method: 'POST', url: `/v1/collections/${collection}/query`, headers: bearer(key), payload: { query: 'x', search_mode: 'keyword' } });
    t.equal((await query('kept', toKept.key)).statusCode, 200, 'the migrated pin still works');
    await createTestCollection(app, admin, { name: 'gone' });
    assertError(t, await query('gone', toGone.key), 403, 'API key is pinned to collection gone, which was deleted', 'a collection created after the migration');
    t.match((await app.inject({ url: '/v1/auth/whoami', headers: bearer(toGone.key) })).json(), { collection: 'gone', collection_deleted: true });
    t.equal((await query('gone', unpinned.key)).statusCode, 200, 'the unpinned key reaches it');

    t.equal((await app.inject({ method: 'DELETE', url: '/v1/collections/kept', headers: admin })).statusCode, 204);
    const [row] = await services.sql<{ collection: string; collection_id: string | null }>('select collection, collection_id from api_keys where id = ?', [toKept.id]);
    t.same(row, { collection: 'kept', collection_id: null }, 'deleting the collection clears the id and keeps the name: the key stays pinned, and refused');
  });
}
