/**
 * CollectionEstimates: the planner's estimates a filtered pgvector search asks for, kept a while per
 * statement and parameters, bounded, and forgotten with their collection. The estimates are read off
 * a fake runner that answers `explain` as PostgreSQL's JSON format does.
 */
import t from 'tap';
import { CollectionEstimates } from '../../src/db/planner-estimates.js';
import type { SqlRunner } from '../../src/plugins.js';

function explainingRunner() {
  const asked: Array<{ query: string; params: unknown[] }> = [];
  let nextRows = 100;
  const run = (async (query: string, params: unknown[] = []) => {
    asked.push({ query, params });
    return [{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': nextRows++ } }] }];
  }) as unknown as SqlRunner;
  Object.assign(run, { dialect: 'postgresql', transaction: () => Promise.reject(new Error('no transactions here')) });
  return { run, asked };
}

const statement = 'select 1 from pgvector_embeddings where collection_id = ? and metadata @> ?::jsonb';

t.test('an estimate is asked for once, then kept until it is older than its age', async (t) => {
  const { run, asked } = explainingRunner();
  const estimates = new CollectionEstimates(run, 1_000);
  t.equal(await estimates.rows('a', statement, ['a', '{"kind":7}']), 100);
  t.equal(await estimates.rows('a', statement, ['a', '{"kind":7}']), 100, 'the same answer');
  t.equal(asked.length, 1, 'from one explain');
  t.match(asked[0]!.query, /^explain \(format json\) select 1/);
  t.equal(await estimates.rows('a', statement, ['a', '{"kind":8}']), 101, 'other parameters are another estimate');
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  t.equal(await estimates.rows('a', statement, ['a', '{"kind":7}']), 102, 'asked again once older than its age');
  t.equal(asked.length, 3);
});

t.test('at most maxEntries are kept, the least recently used forgotten first', async (t) => {
  const { run, asked } = explainingRunner();
  const estimates = new CollectionEstimates(run, 60_000, 2);
  await estimates.rows('a', statement, ['a', '1']);
  await estimates.rows('a', statement, ['a', '2']);
  await estimates.rows('a', statement, ['a', '3']);
  t.equal(asked.length, 3);
  await estimates.rows('a', statement, ['a', '3']);
  await estimates.rows('a', statement, ['a', '2']);
  t.equal(asked.length, 3, 'the two newest kept');
  await estimates.rows('a', statement, ['a', '1']);
  t.equal(asked.length, 4, 'the oldest was forgotten');
});

t.test('forgetting a collection forgets its estimates only', async (t) => {
  const { run, asked } = explainingRunner();
  const estimates = new CollectionEstimates(run);
  await estimates.rows('a', statement, ['a', '1']);
  await estimates.rows('ab', statement, ['ab', '1']);
  estimates.forget('a');
  await estimates.rows('ab', statement, ['ab', '1']);
  t.equal(asked.length, 2, 'another collection, whose id begins with the same text, keeps its own');
  await estimates.rows('a', statement, ['a', '1']);
  t.equal(asked.length, 3, 'the forgotten collection asks again');
});
