/**
 * The groups `npm test` runs the test files in (test/support/test-groups.ts): every folder of tests
 * has one set of groups, so no test file is left out of the suite or run twice.
 */
import t from 'tap';
import { checkoutGroupProblems, groupProblems, parseGroupName, strayTestFiles } from '../support/test-groups.js';

t.test('group file names', async (t) => {
  t.same(parseGroupName('search.ts'), { name: 'search.ts', folder: 'search', part: 1, parts: 1 });
  t.same(parseGroupName('search-2-of-4.ts'), { name: 'search-2-of-4.ts', folder: 'search', part: 2, parts: 4 });
  t.same(parseGroupName('vector-stores-1-of-2.ts'), { name: 'vector-stores-1-of-2.ts', folder: 'vector-stores', part: 1, parts: 2 }, 'a folder with a hyphen');
  t.equal(parseGroupName('search-5-of-4.ts'), undefined, 'a part past the parts');
  t.equal(parseGroupName('search-0-of-4.ts'), undefined);
  t.equal(parseGroupName('Search.js'), undefined);
});

t.test('the checks that no test file is left out or run twice', async (t) => {
  t.same(groupProblems(['auth', 'search'], ['auth.ts', 'search-1-of-2.ts', 'search-2-of-2.ts']), []);
  t.match(groupProblems(['auth', 'search', 'vectors'], ['auth.ts', 'search.ts']), [/^test\/vectors\/ has no group: add groups\/vectors\.ts$/], 'a new folder');
  t.match(groupProblems(['search'], ['search-1-of-3.ts', 'search-2-of-3.ts']), [/^test\/search\/'s groups do not make one set of parts: search-1-of-3\.ts, search-2-of-3\.ts$/], 'a part missing');
  t.match(groupProblems(['search'], ['search.ts', 'search-1-of-2.ts', 'search-2-of-2.ts']), [/one set of parts/], 'the whole folder and parts of it');
  t.match(groupProblems(['search'], ['search.ts', 'old.ts']), [/^groups\/ has groups for test\/old\//], 'a group of a folder that is gone');
  t.match(groupProblems(['search'], ['search.ts', 'Search.js']), [/^groups\/Search\.js is not a group file's name/]);
});

t.test('test files no group takes: directly under test/, or a folder down', async (t) => {
  t.same(strayTestFiles([
    'search/query.test.ts', 'search/query-helpers.ts', 'stray.test.ts', 'search/deeper/hidden.test.ts',
    'support/helper.test.ts', 'admin/alone.own-process.test.ts', 'deeper/still/alone.own-process.test.ts',
  ]), ['stray.test.ts', 'search/deeper/hidden.test.ts', 'support/helper.test.ts']);
});

t.test('this checkout: every folder of tests has one set of groups', async (t) => {
  t.same(await checkoutGroupProblems(), []);
});
