import type { MigrationObject } from '@mikro-orm/core';
import { Migration0001Accounts } from './0001-accounts.js';

/**
 * Migrations are listed in code rather than discovered from disk, so the same list runs from
 * TypeScript sources (tests) and from the compiled JavaScript (`npm start`).
 */
export const migrations: MigrationObject[] = [
  { name: '0001-accounts', class: Migration0001Accounts },
];
