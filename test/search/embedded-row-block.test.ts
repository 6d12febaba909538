import t from 'tap';
import { normalised, RowBlock } from '../../plugins/vector-store/embedded/row-block.js';
import { TopKHits } from '../../plugins/vector-store/embedded/top-k-hits.js';

const dimension = 8;
/** Small segments, so a few hundred rows cross several boundaries; 64 rows take the SIMD scan. */
const rowsPerSegment = 64;

function unitRow(key: number): Float32Array {
  return normalised(Float32Array.from({ length: dimension }, (_, index) => Math.sin(key * (index + 1) * 0.37) + (index === key % dimension ? 2 : 0)));
}

function filledBlock(count: number): RowBlock {
  const block = new RowBlock(dimension, rowsPerSegment);
  for (let key = 0; key < count; key++) block.append(key, unitRow(key), { key });
  return block;
}

/** Every slot's key, row and metadata, in slot order. */
function contents(block: RowBlock): Array<{ key: number; row: number[]; metadata: Record<string, unknown> }> {
  return Array.from({ length: block.size }, (_, slot) => ({ key: block.keyAt(slot), row: Array.from(block.rowAt(slot)), metadata: block.metadataAt(slot) }));
}

/** The top 10 by a plain loop over `keys`, best first (ties by key, as TopKHits orders them). */
function bruteForceTop(query: Float32Array, keys: number[]): number[] {
  const score = (key: number) => unitRow(key).reduce((sum, value, index) => sum + value * query[index]!, 0);
  return [...keys].sort((left, right) => score(right) - score(left) || left - right).slice(0, 10);
}

function searchedTop(block: RowBlock, query: Float32Array, allowedSlot?: (slot: number) => boolean): number[] {
  const best = new TopKHits(10);
  block.searchInto(query, best, allowedSlot);
  return best.bestFirst().map((hit) => hit.key);
}

t.test('rows across segment boundaries are stored, scored and searched like rows of one array', async (t) => {
  const count = rowsPerSegment * 3 + 9;
  const block = filledBlock(count);
  t.equal(block.size, count);
  t.same(contents(block), Array.from({ length: count }, (_, key) => ({ key, row: Array.from(unitRow(key)), metadata: { key } })), 'each slot holds its row');
  for (const key of [0, rowsPerSegment - 1, rowsPerSegment, count - 1]) {
    t.ok(Math.abs(block.similarityAt(unitRow(key), key) - 1) < 1e-6, `row ${key} scores 1 against itself`);
  }
  const keys = Array.from({ length: count }, (_, key) => key);
  for (const key of [3, rowsPerSegment, count - 1]) {
    t.same(searchedTop(block, unitRow(key)), bruteForceTop(unitRow(key), keys), `SIMD scan of full segments and a loop over the last: query ${key}`);
    t.same(searchedTop(block, unitRow(key), (slot) => slot % 3 === 0), bruteForceTop(unitRow(key), keys.filter((k) => k % 3 === 0)), `filtered scan: query ${key}`);
  }
});

t.test('a removal moves the last row, from the last segment, into a hole in an earlier one', async (t) => {
  const count = rowsPerSegment * 2 + 5;
  const block = filledBlock(count);
  const moved = block.removeAt(10);
  t.equal(moved, count - 1, 'the last row moved');
  t.equal(block.keyAt(10), count - 1);
  t.same(Array.from(block.rowAt(10)), Array.from(unitRow(count - 1)), 'with its row');
  t.same(block.metadataAt(10), { key: count - 1 }, 'and its metadata');
  t.equal(block.keyAt(block.size - 1), count - 2);
  t.equal(block.removeAt(block.size - 1), undefined, 'removing the last row moves nothing');
  const left = Array.from({ length: count }, (_, key) => key).filter((key) => key !== 10 && key !== count - 2);
  t.same(contents(block).map((slot) => slot.key).sort((a, b) => a - b), left);
  t.same(searchedTop(block, unitRow(10)), bruteForceTop(unitRow(10), left), 'the removed row is not found');
  t.same(searchedTop(block, unitRow(count - 1)), bruteForceTop(unitRow(count - 1), left), 'the moved row is found');
});

t.test('a block emptied back across boundaries and filled again holds exactly its rows', async (t) => {
  const block = filledBlock(rowsPerSegment * 3);
  // Removing from the front moves a row from the end each time, emptying the later segments.
  for (let removed = 0; removed < rowsPerSegment * 2 + 1; removed++) block.removeAt(0);
  t.equal(block.size, rowsPerSegment - 1);
  const kept = contents(block).map((slot) => slot.key);
  for (let key = 1000; key < 1000 + rowsPerSegment * 2; key++) block.append(key, unitRow(key), { key });
  const keys = [...kept, ...Array.from({ length: rowsPerSegment * 2 }, (_, offset) => 1000 + offset)];
  t.same(contents(block).map((slot) => slot.key), keys, 'the rows kept, then the rows added, in slot order');
  t.ok(contents(block).every((slot) => slot.row.every((value, index) => value === unitRow(slot.key)[index]!)), 'each with its own row');
  t.same(searchedTop(block, unitRow(1050)), bruteForceTop(unitRow(1050), keys));
});

t.test('a growing block never copies the rows of its full segments', async (t) => {
  const block = filledBlock(rowsPerSegment);
  const firstRow = block.rowAt(0);
  for (let key = rowsPerSegment; key < rowsPerSegment * 10; key++) block.append(key, unitRow(key), { key });
  t.equal(block.rowAt(0).buffer, firstRow.buffer, 'the first row is where it was before nine segments were added');
  block.replace(0, unitRow(7), { key: 0 });
  t.same(Array.from(firstRow), Array.from(unitRow(7)), 'and is written there');
});
