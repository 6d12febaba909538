/**
 * `npm test` runs the test files in groups, one process a group: tap's `include` names the group
 * files (`test/groups/*.ts`), each of which imports the test files of one folder, or of one part of
 * a folder, one after another into its own process. About 3 s of CPU of every test process went
 * before its first test (loading the app's modules, then its first PGlite app), for 159 processes.
 *
 * A group file's name says what it runs: `search.ts` every test file of `test/search/`,
 * `search-2-of-4.ts` the second of four parts of it (the folder's files in name order, dealt out in
 * turn). A test file that has to be alone in its process (it sets environment variables, or watches
 * process-wide warnings) is named `*.own-process.test.ts`: tap runs it by itself and no group takes it.
 * Every group checks that each folder of tests has its groups and that no test file sits where no
 * group takes it, so a new folder or a misplaced file fails the suite instead of being left out of
 * it. A test file still runs alone when named: `npx tap test/search/query.test.ts`.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const TEST_ROOT = fileURLToPath(new URL('../', import.meta.url));
const GROUPS_FOLDER = 'groups';
const NOT_TESTS = new Set(['support', GROUPS_FOLDER]);
const OWN_PROCESS_SUFFIX = '.own-process.test.ts';
const TEST_SUFFIX = '.test.ts';

export interface TestGroup {
  /** The group file's name, `search-2-of-4.ts`. */
  name: string;
  folder: string;
  part: number;
  parts: number;
}

/** Reads a group file's name; undefined when it is not one (`search.ts`, `search-2-of-4.ts`). */
export function parseGroupName(name: string): TestGroup | undefined {
  const match = /^([a-z0-9-]+?)(?:-(\d+)-of-(\d+))?\.ts$/.exec(name);
  if (!match) return undefined;
  const part = match[2] ? Number(match[2]) : 1;
  const parts = match[3] ? Number(match[3]) : 1;
  if (part < 1 || part > parts) return undefined;
  return { name, folder: match[1]!, part, parts };
}

/** What is wrong with the groups for these folders of tests: an empty list when every test file has exactly one group. */
export function groupProblems(testFolders: string[], groupFileNames: string[]): string[] {
  const problems: string[] = [];
  const byFolder = new Map<string, TestGroup[]>();
  for (const name of groupFileNames) {
    const group = parseGroupName(name);
    if (!group) {
      problems.push(`${GROUPS_FOLDER}/${name} is not a group file's name (<folder>.ts or <folder>-<part>-of-<parts>.ts)`);
      continue;
    }
    const groups = byFolder.get(group.folder);
    if (groups) groups.push(group);
    else byFolder.set(group.folder, [group]);
  }
  for (const folder of testFolders) {
    const groups = byFolder.get(folder);
    if (!groups) {
      problems.push(`test/${folder}/ has no group: add ${GROUPS_FOLDER}/${folder}.ts`);
      continue;
    }
    const parts = groups[0]!.parts;
    const numbers = new Set(groups.map((group) => group.part));
    if (groups.some((group) => group.parts !== parts) || numbers.size !== groups.length || numbers.size !== parts) {
      problems.push(`test/${folder}/'s groups do not make one set of parts: ${groups.map((group) => group.name).sort().join(', ')}`);
    }
  }
  for (const folder of byFolder.keys()) {
    if (!testFolders.includes(folder)) problems.push(`${GROUPS_FOLDER}/ has groups for test/${folder}/, which holds no test files that run in groups`);
  }
  return problems;
}

/** Every file under `test/`, as `folder/name` paths, in name order: one listing a group process. */
async function testTreeFiles(): Promise<string[]> {
  return (await readdir(TEST_ROOT, { recursive: true })).map((file) => file.split(path.sep).join('/')).sort();
}

/** A file a group takes: a test file, not one of its own process, directly in a folder of tests; its folder then. */
function groupedFolderOf(file: string): string | undefined {
  if (file.endsWith(OWN_PROCESS_SUFFIX) || !file.endsWith(TEST_SUFFIX)) return undefined;
  const folders = file.split('/').slice(0, -1);
  return folders.length === 1 && !NOT_TESTS.has(folders[0]!) ? folders[0] : undefined;
}

/**
 * Test files no group takes and tap would not run alone: directly under `test/`, or in a folder
 * within a folder of tests (groups take a folder's own files only).
 */
export function strayTestFiles(testFilePaths: string[]): string[] {
  return testFilePaths.filter((file) => file.endsWith(TEST_SUFFIX) && !file.endsWith(OWN_PROCESS_SUFFIX) && !groupedFolderOf(file));
}

/** groupProblems for the test folders and group files of `files` (testTreeFiles), and its stray test files. */
function treeGroupProblems(files: string[]): string[] {
  const groupFileNames = files.filter((file) => file.startsWith(`${GROUPS_FOLDER}/`) && file.endsWith('.ts')).map((file) => file.slice(GROUPS_FOLDER.length + 1));
  const testFolders = [...new Set(files.map(groupedFolderOf).filter((folder) => folder !== undefined))];
  const strays = strayTestFiles(files).map((file) => `test/${file} is in no group: move it into a folder of tests, or name it *${OWN_PROCESS_SUFFIX}`);
  return [...groupProblems(testFolders, groupFileNames), ...strays];
}

/** groupProblems for the test folders and group files of this checkout, and its stray test files. */
export async function checkoutGroupProblems(): Promise<string[]> {
  return treeGroupProblems(await testTreeFiles());
}

/** Imports the test files of the group whose file is `groupFileUrl` (its `import.meta.url`), one after another. */
export async function runTestGroup(groupFileUrl: string): Promise<void> {
  const files = await testTreeFiles();
  const problems = treeGroupProblems(files);
  if (problems.length > 0) throw new Error(`the test groups leave test files out or run them twice:\n- ${problems.join('\n- ')}`);
  const group = parseGroupName(path.basename(fileURLToPath(groupFileUrl)))!;
  const members = files.filter((file) => groupedFolderOf(file) === group.folder).filter((_, index) => index % group.parts === group.part - 1);
  for (const file of members) await import(pathToFileURL(path.join(TEST_ROOT, file)).href);
}
