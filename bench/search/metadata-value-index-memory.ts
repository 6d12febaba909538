/**
 * Heap held by the embedded store's index of metadata values for one indexed path over 100k rows,
 * by the shape of the values there: few distinct values, a unique value a row (ids, timestamps),
 * arrays. Measured as the heap freed when the index is dropped, after full collections.
 *
 * Usage: node --expose-gc --import tsx bench/search/metadata-value-index-memory.ts [--rows 100000]
 * Writes bench/results/metadata-value-index-memory.json.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MetadataValueIndex } from '../../plugins/vector-store/embedded/metadata-value-index.js';
import { parseFilter } from '../../src/search/filters/parse-filter.js';
import { machineDescription, writeResult } from '../support/service-process.js';

const { values: args } = parseArgs({ options: { rows: { type: 'string', default: '100000' } } });
const rowCount = Number(args.rows);
const collectGarbage = (globalThis as { gc?: () => void }).gc;
if (!collectGarbage) throw new Error('run with node --expose-gc (see the usage line)');
const heapUsed = (): number => {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
};

const shapes: Record<string, (row: number) => unknown> = {
  distinct_numbers_1000: (row) => row % 1000,
  unique_numbers: (row) => row,
  unique_strings: (row) => `doc-${row.toString(36).padStart(8, '0')}`,
  arrays_of_3_tags_from_50: (row) => [`t${row % 50}`, `t${(row * 7) % 50}`, `t${(row * 13) % 50}`],
};
const bytesPerRow: Record<string, number> = {};
for (const [shape, valueOf] of Object.entries(shapes)) {
  const held = new Map(Array.from({ length: rowCount }, (_, row) => [row, { field: valueOf(row) } as Record<string, unknown>]));
  let index: MetadataValueIndex | undefined = new MetadataValueIndex(() => held.entries());
  index.candidates(parseFilter({ field: 1 })!);
  const withIndex = heapUsed();
  index = undefined;
  bytesPerRow[shape] = Math.round((withIndex - heapUsed()) / held.size);
  process.stderr.write(`[metadata-value-index-memory] ${shape}: ${bytesPerRow[shape]} bytes a row\n`);
}
await writeResult(fileURLToPath(new URL('../results/metadata-value-index-memory.json', import.meta.url)), {
  measured_at: new Date().toISOString(),
  machine: machineDescription(),
  rows: rowCount,
  bytes_per_row_for_one_indexed_path: bytesPerRow,
});
