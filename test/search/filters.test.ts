import t from 'tap';
import { scratchDatabaseUrl } from '../support/test-app.js';
import { openDatabase } from '../../src/db/database.js';
import { createSqlRunner } from '../../src/db/sql-runner.js';
import { BadRequestError } from '../../src/errors.js';
import { filterToSql } from '../../src/search/filters/filter-to-sql.js';
import { compareCodePoints, matchesFilter } from '../../src/search/filters/match-filter.js';
import { maxFilterDepth, parseFilter } from '../../src/search/filters/parse-filter.js';
import { MetadataValueIndex } from '../../plugins/vector-store/embedded/metadata-value-index.js';

/** Metadata rows every filter case is evaluated against (in JavaScript and in SQL). */
const rows: Record<string, Record<string, unknown>> = {
  report: {
    type: 'report', year: 2021, score: 4.5, published: true, rating: null, code: '1', date: '2024-03-01',
    author: { name: 'Ada', team: 'core' }, tags: ['ml', 'nlp'],
  },
  memo: { type: 'memo', year: 2019, published: false, code: 1, date: '2023-12-31', author: { name: 'Grace' }, tags: [] },
  note: { type: 'note', year: '2021', tags: 'ml', nested: { list: [{ id: 7 }, { id: 8 }] }, emoji: '\u{1F600}', bmp: '\uFFFF' },
  empty: {},
  odd: { constructor: 'x', values: [1, '1', null, [2], { a: 1 }], count: 0, negative: -3, big: 1e21, 'a.b': 1, $and: 2, 'back\\slash': 3 },
};

/** [filter JSON, row, expected]: each filter also runs over every row in both evaluators. */
const cases: Array<[Record<string, unknown>, string, boolean]> = [
  [{ type: 'report' }, 'report', true],
  [{ type: 'report' }, 'memo', false],
  [{ type: 'report' }, 'empty', false],
  [{ year: 2021 }, 'report', true],
  [{ year: 2021 }, 'note', false], // "2021" is a string: 1 and "1" differ
  [{ year: '2021' }, 'note', true],
  [{ code: 1 }, 'memo', true],
  [{ code: 1 }, 'report', false],
  [{ published: false }, 'memo', true],
  [{ published: true }, 'memo', false],
  [{ rating: null }, 'report', true],
  [{ rating: null }, 'empty', false], // null matches an explicit null only
  [{ rating: { $ne: null } }, 'empty', true],
  [{ rating: { $ne: null } }, 'report', false],
  [{ rating: { $exists: true } }, 'report', true],
  [{ rating: { $exists: false } }, 'empty', true],
  [{ 'author.name': 'Ada' }, 'report', true],
  [{ 'author.name': { $exists: true } }, 'note', false],
  [{ author: { $eq: 'Ada' } }, 'report', false], // an object equals no scalar
  [{ tags: 'ml' }, 'report', true], // array: any element
  [{ tags: 'ml' }, 'note', true],
  [{ tags: { $ne: 'ml' } }, 'report', false], // array: no element
  [{ tags: { $ne: 'ml' } }, 'memo', true],
  [{ tags: { $in: ['x', 'nlp'] } }, 'report', true],
  [{ tags: { $nin: ['x', 'nlp'] } }, 'report', false],
  [{ tags: { $nin: ['x', 'nlp'] } }, 'empty', true],
  [{ tags: { $in: [] } }, 'report', false],
  [{ tags: { $nin: [] } }, 'empty', true],
  [{ tags: { $gt: 'a' } }, 'report', false], // arrays are not ordered
  [{ year: { $gt: 2020 } }, 'report', true],
  [{ year: { $gt: 2020 } }, 'note', false], // string against number
  [{ year: { $gte: 2021, $lte: 2021 } }, 'report', true],
  [{ year: { $lt: '2022' } }, 'note', true],
  [{ date: { $gte: '2024-01-01' } }, 'report', true],
  [{ date: { $gte: '2024-01-01' } }, 'memo', false],
  [{ score: { $gt: 4.49 } }, 'report', true],
  [{ score: { $lt: 4.5 } }, 'report', false],
  [{ year: { $gt: 2019, $lt: 2021 } }, 'report', false], // bounds on one field: one interval
  [{ year: { $gt: 2019, $lt: 2021 } }, 'memo', false],
  [{ year: { $gte: 2019, $lt: 2022, $gt: 2019 } }, 'report', true], // the tighter of two lower bounds
  [{ year: { $gte: 2019, $lt: 2022, $gt: 2019 } }, 'memo', false],
  [{ year: { $gt: 2018, $gte: 2020 } }, 'memo', false], // the higher lower bound
  [{ year: { $lt: 2022, $lte: 2020 } }, 'report', false], // the lower upper bound
  [{ year: { $gt: 2018, $lte: '2021' } }, 'report', false], // a number and a string bound: no value is both
  [{ date: { $gte: '2023-12-31', $lt: '2024-03-01' } }, 'memo', true],
  [{ date: { $gte: '2023-12-31', $lt: '2024-03-01' } }, 'report', false],
  [{ score: { $gte: 4.5 } }, 'note', false], // missing
  [{ code: { $gt: 0 } }, 'report', false],
  [{ emoji: { $gt: '\uFFFF' } }, 'note', true], // code-point order, not UTF-16
  [{ bmp: { $lt: '\u{1F600}' } }, 'note', true],
  [{ 'nested.list.1.id': 8 }, 'note', true],
  [{ 'nested.list.-1.id': 8 }, 'note', true],
  [{ 'nested.list. +0.id': 7 }, 'note', true], // strtoint: leading blanks and a sign
  [{ 'nested.list.0 .id': 7 }, 'note', false], // ... but no trailing characters
  [{ 'nested.list.2.id': { $exists: true } }, 'note', false],
  [{ 'nested.list.x.id': { $exists: false } }, 'note', true],
  [{ 'nested.list.99999999999.id': { $exists: true } }, 'note', false],
  [{ 'type.length': { $exists: true } }, 'report', false], // a string has no fields
  [{ constructor: { $exists: true } }, 'empty', false], // own keys only
  [{ constructor: 'x' }, 'odd', true],
  [{ values: 1 }, 'odd', true],
  [{ values: '1' }, 'odd', true],
  [{ values: null }, 'odd', true],
  [{ values: 2 }, 'odd', false], // nested arrays are not searched
  [{ values: { $in: [3, 'x'] } }, 'odd', false],
  [{ count: 0 }, 'odd', true],
  [{ negative: { $lt: -2.5 } }, 'odd', true],
  [{ big: { $gt: 1e20 } }, 'odd', true],
  [{ big: 1e21 }, 'odd', true],
  [{ 'a.b': 1 }, 'odd', false], // dots split
  [{ 'a\\.b': 1 }, 'odd', true], // ... unless escaped
  [{ '\\$and': 2 }, 'odd', true], // an escaped $ starts a key, not a combinator
  [{ 'back\\slash': 3 }, 'odd', true], // a backslash before another character is itself
  [{ $and: [{ type: 'report' }, { year: 2021 }] }, 'report', true],
  [{ $or: [{ type: 'memo' }, { year: { $gt: 2020 } }] }, 'note', false],
  [{ $or: [{ type: 'memo' }, { year: { $gt: 2020 } }] }, 'report', true],
  [{ $not: { type: 'report' } }, 'report', false],
  [{ $not: { type: 'report' } }, 'empty', true],
  [{ $not: { year: { $gt: 2020 } } }, 'note', true],
  [{ type: { $in: ['report', 'memo'] }, published: false }, 'memo', true],
  [{ type: { $in: ['report', 'memo'] }, published: false }, 'report', false],
  [{ $or: [{ $and: [{ type: 'note' }, { $not: { tags: 'x' } }] }, { 'author.team': 'core' }] }, 'note', true],
  [{ $or: [{ $and: [{ type: 'note' }, { $not: { tags: 'x' } }] }, { 'author.team': 'core' }] }, 'memo', false],
];

const rowNames = Object.keys(rows).sort();

t.test('matchesFilter gives the expected answer for each case', async (t) => {
  for (const [raw, row, expected] of cases) {
    t.equal(matchesFilter(parseFilter(raw)!, rows[row]), expected, `${JSON.stringify(raw)} on ${row}`);
  }
});

t.test('compareCodePoints orders like PostgreSQL\'s "C" collation', async (t) => {
  t.ok(compareCodePoints('\u{1F600}', '\uFFFF') > 0, 'astral after U+FFFF, unlike "<"');
  t.ok('\u{1F600}' < '\uFFFF');
  t.ok(compareCodePoints('a', 'b') < 0);
  t.ok(compareCodePoints('ab', 'a') > 0);
  t.equal(compareCodePoints('same', 'same'), 0);
});

t.test('the embedded store\'s index of metadata values agrees with matchesFilter on every row, through writes', async (t) => {
  const held = new Map(rowNames.map((name, key) => [key, rows[name]!]));
  const index = new MetadataValueIndex(() => held.entries());
  const nameOf = (key: number) => rowNames[key]!;
  const check = (stage: string) => {
    let served = 0;
    for (const [raw] of cases) {
      const filter = parseFilter(raw)!;
      const candidates = index.candidates(filter);
      if (candidates === null) continue;
      served++;
      const passing = [...held].filter(([, metadata]) => matchesFilter(filter, metadata)).map(([key]) => nameOf(key)).sort();
      const found = [...candidates.keys()].map(nameOf).sort();
      t.ok(candidates.size >= found.length, `${stage}: ${JSON.stringify(raw)} counts no fewer rows than it gives`);
      if (candidates.exact) t.same(found, passing, `${stage}: ${JSON.stringify(raw)} gives exactly the rows that pass`);
      else t.ok(passing.every((name) => found.includes(name)), `${stage}: ${JSON.stringify(raw)} gives every row that passes (${found} ⊇ ${passing})`);
    }
    return served;
  };
  const served = check('as written');
  t.ok(served >= 50, `the index serves ${served} of the ${cases.length} cases`);
  const servedAs = (raw: Record<string, unknown>, intersectAtMost?: number) => {
    const candidates = index.candidates(parseFilter(raw)!, intersectAtMost);
    return candidates === null ? 'not served' : candidates.exact ? 'exactly' : 'as a superset';
  };
  t.equal(servedAs({ $not: { type: 'report' } }), 'not served', '$not');
  t.equal(servedAs({ type: { $ne: 'report' } }), 'not served', '$ne');
  t.equal(servedAs({ tags: { $nin: ['ml'] } }), 'not served', '$nin');
  t.equal(servedAs({ rating: { $exists: true } }), 'not served', '$exists');
  t.equal(servedAs({ 'tags.0': 'ml' }), 'not served', 'an array index in the path');
  t.equal(servedAs({ $or: [{ type: 'memo' }, { type: { $ne: 'memo' } }] }), 'not served', 'an $or with a part not served');
  t.equal(servedAs({ year: { $gt: 2020 } }), 'exactly', 'a range');
  t.equal(servedAs({ $and: [{ type: 'memo' }, { type: { $ne: 'x' } }] }), 'as a superset', 'an $and with a part not served');
  t.equal(servedAs({ $and: [{ type: 'memo' }, { year: { $lt: 2020 } }] }), 'exactly', 'an $and of served parts, intersected');
  t.equal(servedAs({ $and: [{ type: 'memo' }, { year: { $lt: 2020 } }] }, 0), 'as a superset', 'an $and of parts too large to intersect');

  // Every row removed, then written back with other values, then with its own again.
  for (const [key, metadata] of held) index.removeRow(key, metadata);
  const emptied = new Map(held);
  held.clear();
  for (const [raw] of cases) t.equal(index.candidates(parseFilter(raw)!)?.keys().size ?? 0, 0, `emptied: ${JSON.stringify(raw)} finds nothing`);
  for (const key of emptied.keys()) {
    const swapped = emptied.get((key + 1) % emptied.size)!;
    held.set(key, swapped);
    index.addRow(key, swapped);
  }
  check('rows swapped');
  for (const [key, metadata] of emptied) {
    index.removeRow(key, held.get(key)!);
    held.set(key, metadata);
    index.addRow(key, metadata);
  }
  t.equal(check('rows back'), served);
});

t.test('the index of metadata values follows a value from one row to several and back', async (t) => {
  const held = new Map<number, Record<string, unknown>>([[10, { v: 'a', n: 3 }], [20, { v: 'b', n: 5 }]]);
  const index = new MetadataValueIndex(() => held.entries());
  const keysOf = (raw: Record<string, unknown>) => [...index.candidates(parseFilter(raw)!)!.keys()].sort((left, right) => left - right);
  t.same(keysOf({ v: 'a' }), [10]);
  t.same(keysOf({ n: { $gte: 3 } }), [10, 20]);
  held.set(30, { v: 'a', n: 3 });
  index.addRow(30, held.get(30)!);
  t.same(keysOf({ v: 'a' }), [10, 30], 'a second row with the value');
  t.equal(index.candidates(parseFilter({ v: 'a' })!)!.size, 2);
  index.removeRow(10, held.get(10)!);
  held.delete(10);
  t.same(keysOf({ v: 'a' }), [30], 'one row left');
  t.same(keysOf({ n: { $lte: 3 } }), [30]);
  index.removeRow(30, held.get(30)!);
  held.delete(30);
  t.same(keysOf({ v: 'a' }), [], 'none left');
  t.same(keysOf({ n: { $lt: 10 } }), [20], 'the value 3 is gone from the ordered values');
});

t.test('the index of metadata values keeps the paths asked about last', async (t) => {
  const held = new Map([[1, { a: 1, b: 2, c: 3 }]]);
  let passes = 0;
  const index = new MetadataValueIndex(() => {
    passes++;
    return held.entries();
  }, 2);
  for (const field of ['a', 'b', 'a', 'c', 'a']) index.candidates(parseFilter({ [field]: 1 })!);
  t.equal(index.pathCount, 2, 'two paths at most');
  t.equal(passes, 3, 'a, b and c indexed once each; a stayed while in use');
  index.candidates(parseFilter({ b: 2 })!);
  t.equal(passes, 4, 'b, dropped for c, is indexed again');
});

const backends = process.env.TEST_DATABASE_URL ? ['pglite', 'postgresql'] : ['pglite'];
for (const backend of backends) {
  t.test(`filterToSql agrees with matchesFilter on every row (${backend})`, async (t) => {
    const databaseUrl = backend === 'postgresql' ? await scratchDatabaseUrl(t, { migrated: true }) : undefined;
    const db = await openDatabase({ databaseUrl });
    t.teardown(() => db.close());
    const sql = createSqlRunner(db);
    await sql('create table filter_case_rows (name text primary key, metadata jsonb not null)');
    for (const name of rowNames) await sql('insert into filter_case_rows values (?, ?::jsonb)', [name, JSON.stringify(rows[name])]);

    for (const [raw] of cases) {
      const filter = parseFilter(raw)!;
      const fragment = filterToSql(filter, 'metadata');
      const selected = await sql<{ name: string }>(`select name from filter_case_rows where ${fragment.sql} order by name`, fragment.params);
      const expected = rowNames.filter((name) => matchesFilter(filter, rows[name]));
      t.same(selected.map((row) => row.name), expected, JSON.stringify(raw));
    }
    // Combinators with no parts (only code builds these) are neutral elements.
    for (const [filter, expected] of [[{ kind: 'and', filters: [] }, rowNames], [{ kind: 'or', filters: [] }, []]] as const) {
      const fragment = filterToSql(filter as never, 'metadata');
      const selected = await sql<{ name: string }>(`select name from filter_case_rows where ${fragment.sql} order by name`, fragment.params);
      t.same(selected.map((row) => row.name), expected);
    }
  });

  t.test(`filterToSql finds rows through a GIN index on the metadata, with the same answers (${backend})`, async (t) => {
    const databaseUrl = backend === 'postgresql' ? await scratchDatabaseUrl(t, { migrated: true }) : undefined;
    const db = await openDatabase({ databaseUrl });
    t.teardown(() => db.close());
    const sql = createSqlRunner(db);
    await sql('create table filter_index_rows (name text primary key, metadata jsonb not null)');
    await sql('create index filter_index_rows_metadata on filter_index_rows using gin (metadata jsonb_path_ops)');
    for (const name of rowNames) await sql('insert into filter_index_rows values (?, ?::jsonb)', [name, JSON.stringify(rows[name])]);

    // Five rows: the planner scans them unless told not to, and then takes any index it can use.
    await sql.transaction(async (run) => {
      await run('set local enable_seqscan = off');
      const plan = async (fragment: { sql: string; params: unknown[] }) => {
        const lines = await run<{ 'QUERY PLAN': string }>(`explain select name from filter_index_rows where ${fragment.sql}`, fragment.params);
        return lines.map((line) => line['QUERY PLAN']).join('\n');
      };
      let indexed = 0;
      for (const [raw] of cases) {
        const filter = parseFilter(raw)!;
        const fragment = filterToSql(filter, 'metadata');
        const selected = await run<{ name: string }>(`select name from filter_index_rows where ${fragment.sql} order by name`, fragment.params);
        t.same(selected.map((row) => row.name), rowNames.filter((name) => matchesFilter(filter, rows[name])), JSON.stringify(raw));
        if ((await plan(fragment)).includes('filter_index_rows_metadata')) indexed += 1;
      }
      t.ok(indexed >= 20, `the index served ${indexed} of the ${cases.length} cases`);
      for (const raw of [{ type: 'report' }, { tags: { $in: ['x', 'nlp'] } }, { $and: [{ type: 'report' }, { year: { $gt: 2020 } }] }, { $or: [{ type: 'memo' }, { 'author.team': 'core' }] }]) {
        t.match(await plan(filterToSql(parseFilter(raw)!, 'metadata')), /Bitmap Index Scan on filter_index_rows_metadata/, `served: ${JSON.stringify(raw)}`);
      }
      // Containment cannot say "any element of an array at this position", nor "not", nor a range.
      for (const raw of [{ 'nested.list.1.id': 8 }, { $not: { type: 'report' } }, { year: { $gt: 2020 } }, { $or: [{ type: 'memo' }, { year: { $gt: 2020 } }] }, { type: { $ne: 'memo' } }]) {
        t.notMatch(await plan(filterToSql(parseFilter(raw)!, 'metadata')), /filter_index_rows_metadata/, `not served: ${JSON.stringify(raw)}`);
      }
    });
  });
}

t.test('filterToSql parameterises values and refuses unsafe column references', async (t) => {
  const fragment = filterToSql(parseFilter({ "name'; drop table x; --": 'o\'brien' })!, 'c.metadata');
  t.notMatch(fragment.sql, /brien|drop/);
  t.same(fragment.params, [["name'; drop table x; --"], '"o\'brien"', ['{"name\'; drop table x; --":"o\'brien"}', '{"name\'; drop table x; --":["o\'brien"]}']]);
  t.throws(() => filterToSql(parseFilter({ a: 1 })!, 'metadata; drop table x'), TypeError);
});

t.test('parseFilter builds the filter tree', async (t) => {
  t.equal(parseFilter(undefined), undefined);
  t.equal(parseFilter(null), undefined);
  t.equal(parseFilter({}), undefined);
  t.same(parseFilter({ 'author.name': 'Ada' }), {
    kind: 'field', field: 'author.name', path: ['author', 'name'], condition: { operator: '$eq', value: 'Ada' },
  });
  t.same(parseFilter({ year: { $gt: 3, $lte: 9 } }), {
    kind: 'and',
    filters: [
      { kind: 'field', field: 'year', path: ['year'], condition: { operator: '$gt', value: 3 } },
      { kind: 'field', field: 'year', path: ['year'], condition: { operator: '$lte', value: 9 } },
    ],
  });
  t.same(parseFilter({ $not: { a: { $in: [1, 'x', null] } } }), {
    kind: 'not', filter: { kind: 'field', field: 'a', path: ['a'], condition: { operator: '$in', values: [1, 'x', null] } },
  });
});

t.test('parseFilter rejects each class of bad input with a precise BadRequestError', async (t) => {
  const rejects = (raw: unknown, message: string | RegExp) =>
    t.throws(() => parseFilter(raw), message instanceof RegExp ? { message } : new BadRequestError(message), JSON.stringify(raw)?.slice(0, 80));
  const nested = (levels: number): Record<string, unknown> => {
    let filter: Record<string, unknown> = { a: 1 };
    for (let level = 0; level < levels; level++) filter = { $not: filter };
    return filter;
  };

  rejects({ x: { $regex: 'a' } }, 'Unknown filter operator "$regex" on field "x"');
  rejects({ x: { $gt: 1, $where: 'a' } }, 'Unknown filter operator "$where" on field "x"');
  rejects({ $nor: [{ a: 1 }] }, /^Unknown filter key "\$nor"/);
  rejects({ $eq: 1 }, /^Unknown filter key "\$eq"/);
  rejects({ x: { $in: 'a' } }, 'Operator "$in" on field "x" needs an array');
  rejects({ x: { $nin: { a: 1 } } }, 'Operator "$nin" on field "x" needs an array');
  rejects({ x: { $in: [1, [2]] } }, 'Operator "$in" on field "x" takes a string, number, boolean or null');
  rejects({ x: { $exists: 1 } }, 'Operator "$exists" on field "x" needs true or false');
  rejects({ x: { $gt: true } }, 'Operator "$gt" on field "x" needs a number or a string');
  rejects({ x: { $lte: null } }, 'Operator "$lte" on field "x" needs a number or a string');
  rejects({ x: { $lt: [1] } }, 'Operator "$lt" on field "x" needs a number or a string');
  rejects({ x: { $gt: Number.POSITIVE_INFINITY } }, 'Operator "$gt" on field "x" needs a finite number: 1e400 and the like are beyond a double');
  rejects({ x: { $lte: Number.NEGATIVE_INFINITY } }, 'Operator "$lte" on field "x" needs a finite number: -1e400 and the like are beyond a double');
  rejects({ x: { $eq: { a: 1 } } }, 'Operator "$eq" on field "x" takes a string, number, boolean or null');
  rejects({ x: [1, 2] }, /takes a string, number, boolean or null \(use \{"\$in": \[\.\.\.\]\}/);
  rejects({ x: Number.NaN }, /takes a string/);
  rejects({ $and: [] }, '$and needs a non-empty array of filters');
  rejects({ $or: { a: 1 } }, '$or needs a non-empty array of filters');
  rejects([], 'Filter must be a JSON object');
  rejects('type = 1', 'Filter must be a JSON object');
  rejects(5, 'Filter must be a JSON object');
  rejects({ $and: [1] }, '$and[0] must be a filter object');
  rejects({ $not: [] }, '$not must be a filter object');
  rejects({ $or: [{ a: 1 }, {}] }, '$or[1] must not be an empty filter object');
  rejects({ x: {} }, 'Filter on field "x" has no operators');
  rejects({ author: { name: 'Ada' } }, /address nested fields with dots \("author\.name"\)/);
  rejects({ 'a..b': 1 }, 'Filter field "a..b" has an empty path segment');
  rejects({ x: 'a\u0000b' }, 'Filter strings must be valid Unicode without NUL characters');
  rejects({ x: { $gt: '\uD800' } }, 'Filter strings must be valid Unicode without NUL characters');

  t.ok(parseFilter(nested(maxFilterDepth - 1)), '16 levels are accepted');
  rejects(nested(maxFilterDepth), 'Filter nesting is deeper than 16 levels');
  // Nodes: the object, the condition, and one per $in element.
  t.ok(parseFilter({ x: { $in: Array.from({ length: 998 }, (_, index) => index) } }), '1,000 nodes are accepted');
  rejects({ x: { $in: Array.from({ length: 999 }, (_, index) => index) } }, 'Filter has more than 1000 nodes');
  rejects({ $or: Array.from({ length: 600 }, (_, index) => ({ [`f${index}`]: index })) }, 'Filter has more than 1000 nodes');
});
