/**
 * The embedded database on a disk with no space left: it aborted at start ("RuntimeError:
 * Aborted()"), which said nothing of why. Now the start is refused naming the disk and its free
 * space, and once space is freed the database opens with its data. A real full disk: a small
 * tmpfs, so this needs to mount one (root, where the container allows it); elsewhere it is skipped.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { EmbeddedDatabaseDiskFullError, openDatabase } from '../../src/db/database.js';
import { StartRefusal } from '../../src/errors.js';

async function mountSmallDisk(): Promise<string | null> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'rs-small-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=96m', 'tmpfs', directory], { stdio: 'ignore' });
    return directory;
  } catch {
    await rm(directory, { recursive: true, force: true });
    return null;
  }
}

/** Writes a file until the disk refuses: ENOSPC. */
async function fillDisk(file: string): Promise<void> {
  const handle = await open(file, 'w');
  const block = Buffer.alloc(1024 * 1024, 1);
  try {
    for (;;) await handle.write(block);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error;
  } finally {
    await handle.close();
  }
}

const disk = await mountSmallDisk();

t.test('the embedded database on a full disk: the start is refused naming the disk, and opens with its data once space is freed', {
  skip: disk ? false : 'cannot mount a tmpfs here (needs root in a container that allows it)',
}, async (t) => {
  if (!disk) return;
  t.teardown(async () => {
    execFileSync('umount', ['-l', disk]);
    await rm(disk, { recursive: true, force: true });
  });
  const dataDir = path.join(disk, 'db');
  const first = await openDatabase({ dataDir });
  await first.orm.em.getConnection().execute("insert into settings (key, value, updated_at) values ('full_disk_marker', '\"kept\"', now())");
  await first.close();

  const filler = path.join(disk, 'filler');
  await fillDisk(filler);
  const refusal = await openDatabase({ dataDir }).then(async (db) => {
    await db.close();
    return null;
  }, (error: unknown) => error);
  t.type(refusal, EmbeddedDatabaseDiskFullError, `refused for the disk: ${String(refusal)}`);
  t.type(refusal, StartRefusal, 'a start refusal, which main.ts prints as its message alone');
  t.match(String((refusal as Error).message), new RegExp(`^the embedded database in ${dataDir} could not open: the disk holding it has \\d+\\.\\d MB free \\(.+\\); free space \\(the database needs some to start\\) and start again$`));

  await rm(filler);
  const reopened = await openDatabase({ dataDir });
  t.teardown(() => reopened.close());
  const rows: Array<{ value: unknown }> = await reopened.orm.em.getConnection().execute("select value from settings where key = 'full_disk_marker'");
  t.same(rows.map((row) => row.value), ['kept'], 'the data written before is there');
});
