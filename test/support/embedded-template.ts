/**
 * A migrated embedded database, archived once and shared by the test processes through a file:
 * each in-memory test app starts from it (openDatabase's `loadDataDir`) instead of running
 * PGlite's initdb and every migration, which cost about 0.9 s of an app's 1.6 s start, in some
 * 250 apps a run. The file is named by a hash of the migrations' sources, PGlite's version and this
 * file, so a new or changed migration, or a change in how the archive is made, makes a new archive.
 *
 * The archive holds template1 alone, the database PGlite opens: initdb's `postgres` and `template0`
 * are dropped. Unpacking the archive file by file was most of an app's start (0.6 s of CPU for
 * 1,139 files, PGlite resolving each file's directories one by one), and the two databases no app
 * opens were 598 of those files.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite/vector';
import { openDatabase } from '../../src/db/database.js';

const MIGRATIONS = fileURLToPath(new URL('../../src/db/migrations/', import.meta.url));
const PGLITE_PACKAGE = fileURLToPath(new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url));
const THIS_FILE = fileURLToPath(import.meta.url);
const ARCHIVES = path.join(os.tmpdir(), 'rs-test-templates');

let archive: Promise<Blob> | undefined;

/** The archive of a freshly migrated embedded database; made on first use when no process has. */
export function migratedEmbeddedArchive(): Promise<Blob> {
  archive ??= readOrMakeArchive();
  return archive;
}

async function archiveName(): Promise<string> {
  const hash = createHash('sha256').update(await readFile(PGLITE_PACKAGE)).update(await readFile(THIS_FILE));
  for (const name of (await readdir(MIGRATIONS)).sort()) hash.update(name).update(await readFile(path.join(MIGRATIONS, name)));
  return `pglite-${hash.digest('hex').slice(0, 16)}.tar`;
}

async function readOrMakeArchive(): Promise<Blob> {
  const name = await archiveName();
  const file = path.join(ARCHIVES, name);
  const existing = await readFile(file).catch(() => undefined);
  if (existing) return new Blob([existing]);
  const made = await makeArchive();
  await mkdir(ARCHIVES, { recursive: true });
  // Whole or not at all: processes starting together each make one, and a reader never sees half.
  const partial = `${file}.${randomBytes(4).toString('hex')}`;
  await writeFile(partial, Buffer.from(await made.arrayBuffer()));
  await rename(partial, file);
  for (const other of await readdir(ARCHIVES)) {
    if (other !== name && !other.includes('.tar.')) await rm(path.join(ARCHIVES, other), { force: true });
  }
  return made;
}

/** Migrates a database in a scratch directory and archives that directory. */
async function makeArchive(): Promise<Blob> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'rs-template-'));
  try {
    const dataDir = path.join(scratch, 'db');
    await (await openDatabase({ dataDir })).close();
    const pglite = await PGlite.create({ dataDir, extensions: { vector } });
    try {
      // One statement a call: DROP DATABASE cannot run in the transaction of a multi-statement text.
      for (const statement of ['drop database postgres', 'alter database template0 is_template false', 'drop database template0', 'checkpoint']) await pglite.exec(statement);
      return await pglite.dumpDataDir('none');
    } finally {
      await pglite.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
