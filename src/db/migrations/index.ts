import type { MigrationObject } from '@mikro-orm/core';
import { Migration0001Accounts } from './0001-accounts.js';
import { Migration0002Retrieval } from './0002-retrieval.js';
import { Migration0003DocumentsFiles } from './0003-documents-files.js';
import { Migration0004Providers } from './0004-providers.js';
import { Migration0005SearchSpeed } from './0005-search-speed.js';
import { Migration0006InlineVectorRows } from './0006-inline-vector-rows.js';
import { Migration0007DocumentOriginals } from './0007-document-originals.js';
import { Migration0008ChunkOwnerChecks } from './0008-chunk-owner-checks.js';
import { Migration0009AbandonedJobs } from './0009-abandoned-jobs.js';
import { Migration0010IdempotencyRightsAndSecrets } from './0010-idempotency-rights-and-secrets.js';
import { Migration0011ChunkUuids } from './0011-chunk-uuids.js';
import { Migration0012DocumentSourceMetadata } from './0012-document-source-metadata.js';
import { Migration0013ApiKeyPinIds } from './0013-api-key-pin-ids.js';
import { Migration0014PendingIndexRemovals } from './0014-pending-index-removals.js';
import { Migration0015ProviderOutageWaits } from './0015-provider-outage-waits.js';
import { Migration0016ChunkTextStart } from './0016-chunk-text-start.js';

/**
 * Migrations are listed in code rather than discovered from disk, so the same list runs from
 * TypeScript sources (tests) and from the compiled JavaScript (`npm start`).
 */
export const migrations: MigrationObject[] = [
  { name: '0001-accounts', class: Migration0001Accounts },
  { name: '0002-retrieval', class: Migration0002Retrieval },
  { name: '0003-documents-files', class: Migration0003DocumentsFiles },
  { name: '0004-providers', class: Migration0004Providers },
  { name: '0005-search-speed', class: Migration0005SearchSpeed },
  { name: '0006-inline-vector-rows', class: Migration0006InlineVectorRows },
  { name: '0007-document-originals', class: Migration0007DocumentOriginals },
  { name: '0008-chunk-owner-checks', class: Migration0008ChunkOwnerChecks },
  { name: '0009-abandoned-jobs', class: Migration0009AbandonedJobs },
  { name: '0010-idempotency-rights-and-secrets', class: Migration0010IdempotencyRightsAndSecrets },
  { name: '0011-chunk-uuids', class: Migration0011ChunkUuids },
  { name: '0012-document-source-metadata', class: Migration0012DocumentSourceMetadata },
  { name: '0013-api-key-pin-ids', class: Migration0013ApiKeyPinIds },
  { name: '0014-pending-index-removals', class: Migration0014PendingIndexRemovals },
  { name: '0015-provider-outage-waits', class: Migration0015ProviderOutageWaits },
  { name: '0016-chunk-text-start', class: Migration0016ChunkTextStart },
];
