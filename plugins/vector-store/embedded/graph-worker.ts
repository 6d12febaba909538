/**
 * The thread side of graph-thread.ts: holds the usearch HNSW graphs and applies requests in the
 * order they arrive, so a search sees every insert and removal sent before it.
 */
import { parentPort } from 'node:worker_threads';
import usearch, { type Index as UsearchIndex } from 'usearch';
import { errorFields, READY_ID, type ThreadAnswer } from '../../../src/threads/thread-requests.js';
import type { AnnSettings } from './collection-vectors.js';
import type { GraphRequest } from './graph-thread.js';

/** Spawning usearch's own threads for an insert costs more than it saves for a handful of rows. */
const parallelAddMinimumRows = 64;

interface Graph {
  index: UsearchIndex;
  dimension: number;
  ann: AnnSettings;
}

const graphs = new Map<number, Graph>();
const port = parentPort!;

function emptyIndex(dimension: number, ann: AnnSettings): UsearchIndex {
  return new usearch.Index({
    dimensions: dimension,
    metric: usearch.MetricKind.Cos,
    quantization: ann.quantization === 'f16' ? usearch.ScalarKind.F16 : usearch.ScalarKind.F32,
    connectivity: ann.connectivity,
    expansion_add: ann.expansionAdd,
    expansion_search: ann.expansionSearch,
    multi: false,
  });
}

function graphOf(id: number): Graph {
  const graph = graphs.get(id);
  if (!graph) throw new Error(`no graph ${id}`);
  return graph;
}

function handle(request: GraphRequest): unknown {
  switch (request.op) {
    case 'create':
      graphs.set(request.graph, { index: emptyIndex(request.dimension, request.ann), dimension: request.dimension, ann: request.ann });
      return null;
    case 'add':
      graphOf(request.graph).index.add(request.keys, request.rows, request.keys.length >= parallelAddMinimumRows ? 0 : 1);
      return null;
    case 'remove':
      graphOf(request.graph).index.remove(request.keys);
      return null;
    case 'search': {
      // One query on this thread: usearch's own threads cost more than the search.
      const matches = graphOf(request.graph).index.search(request.query, request.count, 1);
      return Array.from(matches.keys, Number);
    }
    case 'save':
      graphOf(request.graph).index.save(request.file);
      return null;
    case 'load': {
      const graph = graphOf(request.graph);
      try {
        graph.index.load(request.file);
        if (graph.index.size() === request.expectedSize && graph.index.dimensions() === graph.dimension) return true;
      } catch {
        // A file usearch refuses is no graph: the caller rebuilds.
      }
      graph.index = emptyIndex(graph.dimension, graph.ann);
      return false;
    }
    case 'drop':
      graphs.delete(request.graph);
      return null;
    case 'sync':
      return null;
  }
}

port.on('message', (request: GraphRequest) => {
  try {
    port.postMessage({ id: request.id, result: handle(request) } satisfies ThreadAnswer);
  } catch (error) {
    port.postMessage({ id: request.id, error: errorFields(error) } satisfies ThreadAnswer);
  }
});
port.postMessage({ id: READY_ID, result: null } satisfies ThreadAnswer);
