/**
 * Service against direct with both running at once, in alternating blocks of queries, so that what
 * the machine does meanwhile (a neighbour on the host, a slower minute) lands on both sides of the
 * ratio instead of on whichever phase it happened in. The phases of search-bench.ts run minutes
 * apart; on a shared 2-core VM their ratio moved by up to 0.7x from run to run.
 *
 * The embedded database has one process per data directory, so direct opens a copy of the
 * service's data taken while the service was stopped (the copy holds the graph the service saved,
 * so both search the same graph).
 */
import type { CollectionRecord } from '../../src/db/entities/index.js';
import type { QueryRuntime } from '../../src/search/collection-query.js';
import { runDirect } from './direct.js';
import { type JsonClient, type LatencySummary, roundTo, summarize } from './harness.js';

export type Mode = 'semantic' | 'keyword' | 'hybrid';

export interface InterleavedResult {
  rounds: number;
  queries_per_block: number;
  service: LatencySummary;
  direct: LatencySummary;
  /** service p50 / direct p50 over all blocks. */
  ratio: number;
  /** The same ratio round by round: how much it still moves. */
  ratio_by_round: number[];
}

export interface InterleavedSides {
  client: JsonClient;
  queryPath: string;
  runtime: QueryRuntime;
  collection: CollectionRecord;
  queries: string[];
}

const bodyOf = (query: string, mode: Mode) => ({ query, search_mode: mode, top_k: 10, skip_cache: true });

async function serviceBlock(sides: InterleavedSides, mode: Mode, blockQueries: string[]): Promise<number[]> {
  const latencies: number[] = [];
  for (const query of blockQueries) latencies.push((await sides.client.request('POST', sides.queryPath, bodyOf(query, mode))).milliseconds);
  return latencies;
}

async function directBlock(sides: InterleavedSides, mode: Mode, blockQueries: string[]): Promise<number[]> {
  return (await runDirect(sides.runtime, sides.collection, blockQueries, mode, blockQueries.length, 0)).latencies;
}

/**
 * `warmup` untimed queries on each side, then `rounds` rounds of one block on each side (which
 * side goes first alternates); each block runs the same queries on both sides.
 */
export async function interleavedComparison(sides: InterleavedSides, mode: Mode, rounds: number, perBlock: number, warmup: number): Promise<InterleavedResult> {
  const slice = (first: number, count: number) => Array.from({ length: count }, (_, offset) => sides.queries[(first + offset) % sides.queries.length]!);
  await serviceBlock(sides, mode, slice(0, warmup));
  await directBlock(sides, mode, slice(0, warmup));
  const service: number[] = [];
  const direct: number[] = [];
  const ratioByRound: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const blockQueries = slice(round * perBlock, perBlock);
    let serviceLatencies: number[];
    let directLatencies: number[];
    if (round % 2 === 0) {
      serviceLatencies = await serviceBlock(sides, mode, blockQueries);
      directLatencies = await directBlock(sides, mode, blockQueries);
    } else {
      directLatencies = await directBlock(sides, mode, blockQueries);
      serviceLatencies = await serviceBlock(sides, mode, blockQueries);
    }
    service.push(...serviceLatencies);
    direct.push(...directLatencies);
    ratioByRound.push(roundTo(summarize(serviceLatencies).p50 / summarize(directLatencies).p50));
  }
  const serviceSummary = summarize(service);
  const directSummary = summarize(direct);
  return {
    rounds, queries_per_block: perBlock, service: serviceSummary, direct: directSummary,
    ratio: roundTo(serviceSummary.p50 / directSummary.p50), ratio_by_round: ratioByRound,
  };
}
