import type { EntityManager } from '@mikro-orm/postgresql';
import { Collection, type CollectionRecord } from '../db/entities/index.js';
import type { SqlRunner } from '../plugins.js';
import { isCollectionName } from './collection-input.js';

/**
 * Collections by name, kept in memory for `ttlMs`: every query and upload starts with this lookup,
 * and on the embedded database a statement costs ~1 ms, a third of a query's own work. Changes
 * made through this process drop the entry at once (`forget`, `recordWrite`); another replica's
 * changes are seen within `ttlMs`, which also bounds how long its writes can hide behind the
 * query cache (keyed on the collection's write version).
 */
export class CollectionDirectory {
  private readonly byName = new Map<string, { record: CollectionRecord; loadedAt: number }>();

  constructor(private readonly fork: () => EntityManager, private readonly ttlMs = 2000) {}

  async find(name: string): Promise<CollectionRecord | null> {
    // No collection has such a name (created ones match the pattern), and a name from a request body
    // may hold what a statement cannot carry: a NUL character failed the lookup, answered with 503.
    if (!isCollectionName(name)) return null;
    const cached = this.byName.get(name);
    if (cached && Date.now() - cached.loadedAt <= this.ttlMs) return cached.record;
    const record = await this.fork().findOne(Collection, { name }, { disableIdentityMap: true });
    if (record) this.byName.set(name, { record, loadedAt: Date.now() });
    else this.byName.delete(name);
    return record;
  }

  forget(collectionId: string): void {
    for (const [name, entry] of this.byName) if (entry.record.id === collectionId) this.byName.delete(name);
  }

  /** Bumps the collection's write version after its content changed, so cached query results expire. */
  async recordWrite(sql: SqlRunner, collectionId: string): Promise<void> {
    await sql('update collections set write_version = write_version + 1, updated_at = now() where id = ?', [collectionId]);
    this.forget(collectionId);
  }
}
