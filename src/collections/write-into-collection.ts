import type { CollectionRecord } from '../db/entities/index.js';
import { NotFoundError } from '../errors.js';

/**
 * Runs a write of a row that belongs to `collection`. Collections are looked up through a cache
 * (CollectionDirectory), so another replica may have deleted this one since: its foreign key then
 * refuses the row (PostgreSQL error 23503), which is the client's 404, not a server failure.
 */
export async function writeIntoCollection<T>(collection: CollectionRecord, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if ((error as { code?: string }).code === '23503') throw new NotFoundError(`Collection ${collection.name} not found: it was deleted while this request was handled`);
    throw error;
  }
}
