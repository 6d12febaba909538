/**
 * Saved HNSW graphs, so a restart does not rebuild them. Rebuilding inserts every vector again
 * (~5,900/s on one core: ~20 s per 100k vectors, bench/results/vector-stores.json); loading a
 * saved graph reads a file.
 *
 * The table stays the source of truth. A snapshot is written when the store closes and is good
 * for one start: taking it deletes it, so a crash later (which can leave the table ahead of any
 * graph on disk) only ever costs a rebuild. It is used only when its fingerprint (every key and
 * unit row) equals that of the rows just loaded from the table, and its settings equal the store's.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AnnSettings, CollectionVectors } from './collection-vectors.js';

/**
 * 2 since inserts run on one thread: graphs of format 1 were built by usearch's parallel inserts,
 * which can leave rows no search reaches (graph-worker.ts), so they are rebuilt rather than loaded.
 */
const SNAPSHOT_FORMAT = 2;

interface SnapshotManifest {
  format: typeof SNAPSHOT_FORMAT;
  dimension: number;
  ann: AnnSettings;
  count: number;
  fingerprint: string;
  /** SHA-256 of the graph file: usearch's loader trusts its input (a damaged file crashes the process). */
  graphSha256: string;
}

/**
 * The settings that shape a saved graph. expansion_search only steers searches: a loaded graph
 * searches with the index's own (measured), so changing it must not cost a rebuild.
 */
function graphShape({ connectivity, expansionAdd, quantization }: AnnSettings): string {
  return JSON.stringify({ connectivity, expansionAdd, quantization });
}

export interface TakenSnapshot {
  /** Whether the snapshot was made from exactly these rows with graph settings like these, and its graph file is intact. */
  matches(vectors: CollectionVectors, ann: AnnSettings): Promise<boolean>;
  graphFile: string;
  /** Deletes the graph file; call once the graph is loaded (or not used). */
  discard(): Promise<void>;
}

const COLLECTION_ID = /^[0-9a-f-]{36}$/i;

export class GraphSnapshots {
  constructor(private readonly directory: string) {}

  private files(collectionId: string): { manifest: string; graph: string } {
    // Collection ids are UUIDs made by the service; anything else must not become a path.
    if (!COLLECTION_ID.test(collectionId)) throw new Error(`not a collection id: ${collectionId}`);
    return { manifest: path.join(this.directory, `${collectionId}.json`), graph: path.join(this.directory, `${collectionId}.usearch`) };
  }

  async save(collectionId: string, vectors: CollectionVectors, ann: AnnSettings): Promise<void> {
    const files = this.files(collectionId);
    await mkdir(this.directory, { recursive: true });
    // Graph first, manifest last, each renamed into place: a manifest never names a partial graph.
    await vectors.saveGraph(`${files.graph}.partial`);
    await rename(`${files.graph}.partial`, files.graph);
    const manifest: SnapshotManifest = {
      format: SNAPSHOT_FORMAT, dimension: vectors.dimension, ann, count: vectors.size, fingerprint: vectors.fingerprint(), graphSha256: await sha256Of(files.graph),
    };
    await writeFile(`${files.manifest}.partial`, JSON.stringify(manifest));
    await rename(`${files.manifest}.partial`, files.manifest);
  }

  /** The collection's snapshot, removed from disk as it is taken (its graph file goes on `discard`). */
  async take(collectionId: string): Promise<TakenSnapshot | null> {
    const files = this.files(collectionId);
    let manifest: SnapshotManifest;
    try {
      manifest = JSON.parse(await readFile(files.manifest, 'utf8')) as SnapshotManifest;
    } catch {
      // No snapshot, or an unreadable manifest: a graph without one is never used.
      await this.remove(collectionId);
      return null;
    }
    await rm(files.manifest, { force: true });
    return {
      graphFile: files.graph,
      matches: async (vectors, ann) => manifest.format === SNAPSHOT_FORMAT
        && manifest.dimension === vectors.dimension
        && manifest.count === vectors.size
        && graphShape(manifest.ann) === graphShape(ann)
        && manifest.fingerprint === vectors.fingerprint()
        && manifest.graphSha256 === await sha256Of(files.graph).catch(() => null),
      discard: () => rm(files.graph, { force: true }),
    };
  }

  async remove(collectionId: string): Promise<void> {
    const files = this.files(collectionId);
    // The manifest is what makes a snapshot usable, so failing to remove it must surface.
    await rm(files.manifest, { force: true });
    // A graph without its manifest is never loaded; the rest is what a save that failed half-way
    // left. Each goes on its own, and one that cannot (a directory there is not ours) stays.
    for (const file of [files.graph, `${files.manifest}.partial`, `${files.graph}.partial`]) await rm(file, { force: true }).catch(() => undefined);
  }
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}
