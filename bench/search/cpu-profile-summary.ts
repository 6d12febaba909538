/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`, e.g. the service run by search-bench.ts
 * with BENCH_CPU_PROF_DIR): self time by package / source file and by function, and inclusive time
 * of functions whose name matches the given patterns.
 *
 * Usage: npx tsx bench/search/cpu-profile-summary.ts <file.cpuprofile> [--top 30] [--inclusive name1,name2,...]
 *   [--from S] [--to S]   only the samples taken between S seconds after the profile started and S
 *                         seconds after (leaves out a service's start-up, as in query-profile.ts)
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '30' }, inclusive: { type: 'string', default: '' },
    from: { type: 'string', default: '0' }, to: { type: 'string', default: 'Infinity' },
  },
});
const file = positionals[0];
if (!file) {
  process.stderr.write('usage: cpu-profile-summary.ts <file.cpuprofile> [--top N] [--inclusive a,b] [--from S] [--to S]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const top = Number(values.top);

const fromMicros = Number(values.from) * 1e6;
const toMicros = Math.min(Number(values.to) * 1e6, profile.endTime - profile.startTime);

// Self time per node from the sample stream (time deltas belong to the sample they precede).
const selfMicros = new Map<number, number>();
let sampledAt = 0;
for (let index = 0; index < profile.samples.length; index++) {
  sampledAt += profile.timeDeltas[index] ?? 0;
  if (sampledAt < fromMicros || sampledAt > toMicros) continue;
  const node = profile.samples[index]!;
  const delta = profile.timeDeltas[index + 1] ?? 0;
  selfMicros.set(node, (selfMicros.get(node) ?? 0) + delta);
}
const totalMicros = toMicros - fromMicros;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

function category(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (!url) return functionName.startsWith('(') ? functionName : `(native) ${functionName}`;
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return `node_modules/${modules[1]}`;
  if (url.startsWith('node:')) return url;
  const local = /\/(dist\/)?((src|plugins)\/.*)$/.exec(url);
  return local ? local[2]! : url;
}

const label = (node: ProfileNode) => `${node.callFrame.functionName || '(anonymous)'}  ${category(node)}:${node.callFrame.lineNumber + 1}`;

function table(title: string, entries: Map<string, number>): void {
  const rows = [...entries].sort((a, b) => b[1] - a[1]).slice(0, top);
  process.stdout.write(`\n${title}\n`);
  for (const [name, micros] of rows) {
    process.stdout.write(`${(micros / 1000).toFixed(0).padStart(8)} ms ${((100 * micros) / totalMicros).toFixed(1).padStart(5)}%  ${name}\n`);
  }
}

const byCategory = new Map<string, number>();
const byFunction = new Map<string, number>();
for (const [id, micros] of selfMicros) {
  const node = byId.get(id)!;
  byCategory.set(category(node), (byCategory.get(category(node)) ?? 0) + micros);
  byFunction.set(label(node), (byFunction.get(label(node)) ?? 0) + micros);
}
process.stdout.write(`${file}: ${(totalMicros / 1e6).toFixed(1)} s profiled (from ${(fromMicros / 1e6).toFixed(1)} s), ${profile.samples.length} samples in all\n`);
table('self time by package / file', byCategory);
table('self time by function', byFunction);

const patterns = values.inclusive.split(',').map((name) => name.trim()).filter(Boolean);
if (patterns.length > 0) {
  // Inclusive: a sample counts for a function when the function is on its stack (once per sample).
  const inclusive = new Map<string, number>();
  for (const [id, micros] of selfMicros) {
    const seen = new Set<string>();
    for (let current: number | undefined = id; current !== undefined; current = parentOf.get(current)) {
      const name = byId.get(current)!.callFrame.functionName;
      if (patterns.includes(name) && !seen.has(name)) {
        seen.add(name);
        inclusive.set(name, (inclusive.get(name) ?? 0) + micros);
      }
    }
  }
  table('inclusive time of the named functions', inclusive);
}
