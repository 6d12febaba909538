import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { AppServices } from '../../src/services.js';

/**
 * The originals a collection keeps: the files in its directory of DATA_DIR/files (element pictures
 * aside), then `database:<document id>` for each small original kept in document_originals.
 */
export async function storedOriginals(services: AppServices, collectionId: string): Promise<string[]> {
  const directory = path.join(services.config.dataDir, 'files', collectionId);
  const files = existsSync(directory) ? readdirSync(directory, { withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => entry.name) : [];
  const rows = await services.sql<{ document_id: string }>(
    'select o.document_id from document_originals o join documents d on d.id = o.document_id where d.collection_id = ? order by d.created_at',
    [collectionId],
  );
  return [...files, ...rows.map((row) => `database:${row.document_id}`)];
}
