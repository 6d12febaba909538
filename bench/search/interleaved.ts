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
import type { QueryRuntime, QueryTimings } from '../../src/search/collection-query.js';
import { runDirect } from './direct.js';
import { type JsonClient, type LatencySummary, medianOfFields, roundTo, summarize } from './harness.js';

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
  /**
   * Median of each stage timing the query code reports (queryCollection's `timings`), on each
   * side: whether the gap is the query code running slower inside the service process, or
   * what the service does around it.
   */
  query_code_ms: { service: Record<string, number>; direct: Record<string, number> };
}

export interface InterleavedSides {
  client: JsonClient;
  queryPath: string;
  runtime: QueryRuntime;
  collection: CollectionRecord;
  queries: string[];
}

const bodyOf = (query: string, mode: Mode) => ({ query, search_mode: mode, top_k: 10, skip_cache: true });

interface Block {
  latencies: number[];
  timings: QueryTimings[];
}

async function serviceBlock(sides: InterleavedSides, mode: Mode, blockQueries: string[]): Promise<Block> {
  const block: Block = { latencies: [], timings: [] };
  for (const query of blockQueries) {
    const response = await sides.client.request<{ timings: QueryTimings }>('POST', sides.queryPath, bodyOf(query, mode));
    block.latencies.push(response.milliseconds);
    block.timings.push(response.body.timings);
  }
  return block;
}

async function directBlock(sides: InterleavedSides, mode: Mode, blockQueries: string[]): Promise<Block> {
  return runDirect(sides.runtime, sides.collection, blockQueries, mode, blockQueries.length, 0);
}

/**
 * `warmup` untimed queries on each side, then `rounds` rounds of one block on each side (which
 * side goes first alternates); each block runs the same queries on both sides.
 */
export async function interleavedComparison(sides: InterleavedSides, mode: Mode, rounds: number, perBlock: number, warmup: number): Promise<InterleavedResult> {
  const slice = (first: number, count: number) => Array.from({ length: count }, (_, offset) => sides.queries[(first + offset) % sides.queries.length]!);
  await serviceBlock(sides, mode, slice(0, warmup));
  await directBlock(sides, mode, slice(0, warmup));
  const service: Block = { latencies: [], timings: [] };
  const direct: Block = { latencies: [], timings: [] };
  const ratioByRound: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const blockQueries = slice(round * perBlock, perBlock);
    let serviceRound: Block;
    let directRound: Block;
    if (round % 2 === 0) {
      serviceRound = await serviceBlock(sides, mode, blockQueries);
      directRound = await directBlock(sides, mode, blockQueries);
    } else {
      directRound = await directBlock(sides, mode, blockQueries);
      serviceRound = await serviceBlock(sides, mode, blockQueries);
    }
    for (const [total, round] of [[service, serviceRound], [direct, directRound]] as const) {
      total.latencies.push(...round.latencies);
      total.timings.push(...round.timings);
    }
    ratioByRound.push(roundTo(summarize(serviceRound.latencies).p50 / summarize(directRound.latencies).p50));
  }
  const serviceSummary = summarize(service.latencies);
  const directSummary = summarize(direct.latencies);
  return {
    rounds, queries_per_block: perBlock, service: serviceSummary, direct: directSummary,
    ratio: roundTo(serviceSummary.p50 / directSummary.p50), ratio_by_round: ratioByRound,
    query_code_ms: { service: medianOfFields(service.timings), direct: medianOfFields(direct.timings) },
  };
}
