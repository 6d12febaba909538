import type { SqlRunner } from '../plugins.js';

/**
 * Bytes the embedded database holds free inside its files, which its next writes fill before the
 * disk's: the space of deleted rows, once a vacuum has recorded it in the free space map, in the
 * service's tables, their indexes and their TOAST tables (where originals and long texts are).
 * Read with pg_freespacemap, which ships with PGlite; about 20 ms for 200 MB of tables.
 */
export async function reusableDatabaseBytes(sql: SqlRunner): Promise<number> {
  const [row] = await sql<{ bytes: string | number }>(`select coalesce(sum(space.avail), 0) as bytes
    from pg_class relation cross join lateral pg_freespace(relation.oid) space
    where relation.relnamespace in ('public'::regnamespace, 'pg_toast'::regnamespace) and relation.relkind in ('r', 'i', 't', 'm')`);
  return Number(row?.bytes ?? 0);
}
