import type { MigrationObject } from '@mikro-orm/core';

/**
 * Migrations are listed in code rather than discovered from disk, so the same list runs from
 * TypeScript sources (tests) and from the compiled JavaScript (`npm start`). Each is imported only
 * when some migration is pending: their base class brings @mikro-orm/migrations and umzug, about
 * 220 modules that a start on an up-to-date database does not need (migrate-to-latest.ts).
 */
const migrationClasses: Record<string, () => Promise<MigrationObject['class']>> = {
  '0001-accounts': async () => (await import('./0001-accounts.js')).Migration0001Accounts,
  '0002-retrieval': async () => (await import('./0002-retrieval.js')).Migration0002Retrieval,
  '0003-documents-files': async () => (await import('./0003-documents-files.js')).Migration0003DocumentsFiles,
  '0004-providers': async () => (await import('./0004-providers.js')).Migration0004Providers,
  '0005-search-speed': async () => (await import('./0005-search-speed.js')).Migration0005SearchSpeed,
  '0006-inline-vector-rows': async () => (await import('./0006-inline-vector-rows.js')).Migration0006InlineVectorRows,
  '0007-document-originals': async () => (await import('./0007-document-originals.js')).Migration0007DocumentOriginals,
  '0008-chunk-owner-checks': async () => (await import('./0008-chunk-owner-checks.js')).Migration0008ChunkOwnerChecks,
  '0009-abandoned-jobs': async () => (await import('./0009-abandoned-jobs.js')).Migration0009AbandonedJobs,
  '0010-idempotency-rights-and-secrets': async () => (await import('./0010-idempotency-rights-and-secrets.js')).Migration0010IdempotencyRightsAndSecrets,
  '0011-chunk-uuids': async () => (await import('./0011-chunk-uuids.js')).Migration0011ChunkUuids,
  '0012-document-source-metadata': async () => (await import('./0012-document-source-metadata.js')).Migration0012DocumentSourceMetadata,
  '0013-api-key-pin-ids': async () => (await import('./0013-api-key-pin-ids.js')).Migration0013ApiKeyPinIds,
  '0014-pending-index-removals': async () => (await import('./0014-pending-index-removals.js')).Migration0014PendingIndexRemovals,
  '0015-provider-outage-waits': async () => (await import('./0015-provider-outage-waits.js')).Migration0015ProviderOutageWaits,
  '0016-chunk-text-start': async () => (await import('./0016-chunk-text-start.js')).Migration0016ChunkTextStart,
};

/** Every migration's name, oldest first: what `schema_migrations` holds once all have run. */
export const migrationNames: readonly string[] = Object.keys(migrationClasses);

export async function loadMigrations(): Promise<MigrationObject[]> {
  return Promise.all(Object.entries(migrationClasses).map(async ([name, load]) => ({ name, class: await load() })));
}
