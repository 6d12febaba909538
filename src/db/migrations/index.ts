import type { MigrationObject } from '@mikro-orm/core';

/**
 * Migrations are listed in code rather than discovered from disk, so the same list runs from
 * TypeScript sources (tests) and from the compiled JavaScript (`npm start`). Each name is its file
 * in this folder, which exports the migration's class and nothing else. The files are imported
 * only when some migration is pending: their base class brings @mikro-orm/migrations and umzug,
 * about 220 modules that a start on an up-to-date database does not need (migrate-to-latest.ts).
 */
export const migrationNames: readonly string[] = [
  '0001-accounts',
  '0002-retrieval',
  '0003-documents-files',
  '0004-providers',
  '0005-search-speed',
  '0006-inline-vector-rows',
  '0007-document-originals',
  '0008-chunk-owner-checks',
  '0009-abandoned-jobs',
  '0010-idempotency-rights-and-secrets',
  '0011-chunk-uuids',
  '0012-document-source-metadata',
  '0013-api-key-pin-ids',
  '0014-pending-index-removals',
  '0015-provider-outage-waits',
  '0016-chunk-text-start',
  '0017-keyword-packed-postings',
  '0018-metadata-containment-indexes',
  '0019-short-metadata-pending-list',
  '0020-document-metadata-index',
  '0021-query-daily-totals',
  '0022-embedding-cache-age-index',
  '0023-upload-session-expiry',
  '0024-query-daily-texts',
  '0025-query-hourly-totals',
  '0026-query-text-folded-keys',
  '0027-collection-chunk-totals',
];

export async function loadMigrations(): Promise<MigrationObject[]> {
  return Promise.all(migrationNames.map(async (name) => {
    const exported = Object.values(await import(`./${name}.js`) as Record<string, MigrationObject['class']>);
    if (exported.length !== 1) throw new Error(`migration ${name} must export its class and nothing else`);
    return { name, class: exported[0]! };
  }));
}
