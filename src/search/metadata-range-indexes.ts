/**
 * B-tree indexes over chunk metadata for range filters on PostgreSQL, made per collection and field
 * the first time a query asks for a range on it.
 *
 * Why: the filter's SQL reads each field with `#>` (filter-to-sql.ts), which only the GIN index over
 * metadata serves, and only for equality. A range few chunks pass made pgvector's HNSW scan walk the
 * graph testing every row it met (semantic 56 ms, hybrid 81 ms p50 at 115k chunks for a range 1 % of
 * them pass; bench/search/filtered-queries.ts). PostgreSQL cannot know which fields a collection's
 * metadata holds, and indexing every field of every chunk would tax every write, so an index is made
 * when a range first asks for it, like the embedded store's index of values.
 *
 * - One partial index a field and value type: `on chunks (<expression>) where collection_id = '<id>'`
 *   (range-scope.ts writes the expression), built with `create index concurrently` in the
 *   background, one at a time, so neither writes nor queries wait for it. Queries go on as before
 *   until it is valid. At most `maxPerCollection` a collection. (No `include (key)`: PostgreSQL
 *   scans an expression index index-only only when the expression's column is in it as well.)
 * - With every index a range needs in place, `candidateKeys` reads the chunks in range from them,
 *   up to a limit that grows with the square root of topK x the collection's chunks, as the embedded
 *   store's `indexedCandidatesScale` does. When they are that few, the query ranks just them (the
 *   stores' `keys`), exactly; else it goes on as before. A range the index's statistics (gathered by
 *   ANALYZE, which runs after each build) say holds more than that is not read at all
 *   (range-index-statistics.ts).
 * - The planner is not left to choose the index: statistics of a partial index's expressions are not
 *   used for estimates, and pgvector costs an HNSW scan as if the filter cost nothing, so a plan
 *   through the index was not chosen even where it took 2-4 ms against 40.
 * - The catalog is the record: names carry a hash of the collection id (so a deleted collection's
 *   indexes are found and dropped) and of the field and type, which the index's definition holds.
 *   Indexes other replicas made are found when one is missing and the catalog was read more than
 *   `catalogRefreshMs` ago; one another replica is building is left to it. An invalid index no build
 *   is making (a process stopped during its build) is dropped and built again; a build that fails
 *   is dropped, and the field is not tried again by this process.
 */
import { createHash } from 'node:crypto';
import { isUuid } from '../db/uuid-pattern.js';
import type { PluginLogger, SqlRunner } from '../plugins.js';
import type { MetadataFilter } from './filters/filter-types.js';
import { rangeScope, type RangeIndexSpec, type RangeValueType } from './filters/range-scope.js';
import { shareInRange, type RangeIndexStatistics } from './range-index-statistics.js';

export interface RangeIndexState {
  field: string;
  type: RangeValueType;
  state: 'ready' | 'building' | 'failed';
}

export interface MetadataRangeIndexes {
  /**
   * The keys of the chunks (of `tenant`, when given) whose metadata the filter's ranges admit, when
   * every index the ranges need is ready and at most the limit for `depth` results are in range;
   * else null (and the missing indexes are set to be built).
   */
  candidateKeys(collectionId: string, filter: MetadataFilter, tenant: string | null, depth: number): Promise<number[] | null>;
  describe(collectionId: string): Promise<RangeIndexState[]>;
  dropCollection(collectionId: string): Promise<void>;
  /** Stops building: a build under way is cancelled. */
  close(): Promise<void>;
}

export interface MetadataRangeIndexOptions {
  /** Indexes a collection may have; 0 makes none. */
  maxPerCollection: number;
  /**
   * Chunks in range that are ranked by key: this x sqrt(depth x the collection's chunks). 6 by
   * default, as the pgvector store's for equalities: with 4, a range 10 % of 115k chunks pass was left
   * to hybrid's 50-deep HNSW scan (65-77 ms p50 against 55 read; bench/README.md, "Metadata filters").
   */
  candidatesScale?: number;
  catalogRefreshMs?: number;
}

interface CatalogIndex {
  name: string;
  valid: boolean;
  /** The collection's chunks when last counted (vacuum, analyze or the build). */
  rows: number;
  field: string;
  type: RangeValueType;
  /** From the collection's last ANALYZE since the build; none before. */
  statistics?: RangeIndexStatistics;
}

const namePrefix = 'chunks_range_';

const shortHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);
const collectionPrefix = (collectionId: string) => `${namePrefix}${shortHash(collectionId)}_`;
const indexName = (collectionId: string, spec: Pick<RangeIndexSpec, 'path' | 'type'>) => `${collectionPrefix(collectionId)}${shortHash(`${spec.type}:${JSON.stringify(spec.path)}`)}`;

export class PostgresMetadataRangeIndexes implements MetadataRangeIndexes {
  private catalog = new Map<string, CatalogIndex>();
  private catalogReadAt = -Infinity;
  /** Builds waiting or under way, by index name, run one at a time. */
  private readonly queued = new Map<string, { collectionId: string; spec: RangeIndexSpec }>();
  private readonly failed = new Map<string, RangeIndexSpec>();
  /** Indexes another process was building, when this one last looked. */
  private readonly builtElsewhere = new Map<string, number>();
  private building: Promise<void> | null = null;
  /** The index being built. */
  private current: string | null = null;
  private closed = false;
  private readonly candidatesScale: number;
  private readonly catalogRefreshMs: number;

  constructor(private readonly sql: SqlRunner, private readonly logger: PluginLogger, private readonly options: MetadataRangeIndexOptions) {
    this.candidatesScale = options.candidatesScale ?? 6;
    this.catalogRefreshMs = options.catalogRefreshMs ?? 10_000;
  }

  async candidateKeys(collectionId: string, filter: MetadataFilter, tenant: string | null, depth: number): Promise<number[] | null> {
    if (this.options.maxPerCollection <= 0 || !isUuid(collectionId)) return null;
    const scope = rangeScope(filter);
    if (scope === null) return null;
    const names = scope.indexes.map((spec) => indexName(collectionId, spec));
    // Read again for indexes other replicas made, and now and then for the chunk counts.
    const sinceRead = performance.now() - this.catalogReadAt;
    if ((names.some((name) => !this.catalog.get(name)?.valid) && sinceRead > this.catalogRefreshMs) || sinceRead > this.catalogRefreshMs * 6) await this.readCatalog();
    const missing = scope.indexes.filter((_, position) => !this.catalog.get(names[position]!)?.valid);
    if (missing.length > 0) {
      for (const spec of missing) this.requestBuild(collectionId, spec);
      return null;
    }
    const rows = Math.max(...names.map((name) => this.catalog.get(name)!.rows), 1);
    const limit = Math.ceil(this.candidatesScale * Math.sqrt(Math.max(depth, 1) * rows));
    // The scan below cannot stop early (a bitmap of every row in range comes first): a range its
    // statistics say is far too wide is not read at all (a 10 % range at 115k chunks cost 8-15 ms).
    const share = scope.estimateShare((spec, bounds) => {
      const statistics = this.catalog.get(indexName(collectionId, spec))?.statistics;
      return statistics ? shareInRange(statistics, spec.type, bounds) : null;
    });
    if (share !== null && share * rows > limit) return null;
    const [found] = await this.sql.transaction(async (run) => {
      // Only a bitmap scan of the range indexes serves this well. The planner, which does not know
      // how few rows are in range, chose a sequential scan, or a scan of the collection's unique
      // index testing the range on every row (150-560 ms at 115k chunks).
      await run('set local enable_seqscan = off');
      await run('set local enable_indexscan = off');
      // One row of text: 11.5k keys as rows took the driver about 8 ms to read.
      return run<{ count: number | string; keys: string | null }>(
        `select count(*) as count, string_agg(key::text, ',') as keys from (
           select key from chunks where collection_id = ?::uuid${tenant === null ? '' : ' and tenant = ?'} and ${scope.sql} limit ?) as in_range`,
        [collectionId, ...(tenant === null ? [] : [tenant]), ...scope.params, limit + 1],
      );
    });
    if (Number(found!.count) > limit) return null;
    return found!.keys === null ? [] : found!.keys.split(',').map(Number);
  }

  async describe(collectionId: string): Promise<RangeIndexState[]> {
    await this.readCatalog();
    const prefix = collectionPrefix(collectionId);
    const states = new Map<string, RangeIndexState>();
    for (const index of this.catalog.values()) {
      if (index.name.startsWith(prefix)) states.set(index.name, { field: index.field, type: index.type, state: index.valid ? 'ready' : 'building' });
    }
    for (const [name, { spec }] of this.queued) {
      if (name.startsWith(prefix) && !states.has(name)) states.set(name, { field: spec.path.join('.'), type: spec.type, state: 'building' });
    }
    for (const [name, spec] of this.failed) {
      if (name.startsWith(prefix)) states.set(name, { field: spec.path.join('.'), type: spec.type, state: 'failed' });
    }
    return [...states.values()].sort((a, b) => a.field.localeCompare(b.field) || a.type.localeCompare(b.type));
  }

  async dropCollection(collectionId: string): Promise<void> {
    const prefix = collectionPrefix(collectionId);
    for (const name of this.queued.keys()) if (name.startsWith(prefix)) this.queued.delete(name);
    for (const name of this.failed.keys()) if (name.startsWith(prefix)) this.failed.delete(name);
    const rows = await this.sql<{ name: string }>("select relname as name from pg_class where relkind = 'i' and starts_with(relname, ?)", [prefix]);
    for (const { name } of rows) await this.dropIndex(name);
  }

  /**
   * A build under way is cancelled rather than waited for: on a large collection it can take longer
   * than a stop may. It leaves an invalid index, which the next start drops and builds again.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.queued.clear();
    if (this.current !== null) {
      await this.sql(
        'select pg_cancel_backend(p.pid) from pg_stat_progress_create_index p join pg_class c on c.oid = p.index_relid where c.relname = ?',
        [this.current],
      ).catch(() => []);
    }
    await this.building;
  }

  private async readCatalog(): Promise<void> {
    const rows = await this.sql<{ name: string; valid: boolean; rows: number | string; definition: string }>(
      `select c.relname as name, i.indisvalid as valid, c.reltuples as rows, pg_get_indexdef(c.oid) as definition
       from pg_class c join pg_index i on i.indexrelid = c.oid where starts_with(c.relname, ?)`,
      [namePrefix],
    );
    // The values come as their arrays' text, cast by the index's type (json for a number index's jsonb).
    const statistics = await this.sql<{ name: string; null_share: number; common_values: unknown[] | null; common_shares: number[] | null; bounds: unknown[] | null }>(
      `select s.tablename as name, s.null_frac as null_share, s.most_common_freqs as common_shares,
         case when s.text then array_to_json(s.most_common_vals::text::text[]) else array_to_json(s.most_common_vals::text::jsonb[]) end as common_values,
         case when s.text then array_to_json(s.histogram_bounds::text::text[]) else array_to_json(s.histogram_bounds::text::jsonb[]) end as bounds
       from (select stats.*, position('#>>' in pg_get_indexdef(c.oid)) > 0 as text
             from pg_stats stats join pg_class c on c.relname = stats.tablename
             where stats.schemaname = current_schema() and starts_with(stats.tablename, ?)) s`,
      [namePrefix],
    );
    const statisticsOf = new Map(statistics.map((row) => [row.name, {
      nullShare: Number(row.null_share), commonValues: row.common_values ?? [], commonShares: (row.common_shares ?? []).map(Number), histogramBounds: row.bounds ?? [],
    }]));
    const catalog = new Map<string, CatalogIndex>();
    for (const row of rows) {
      const indexed = indexedField(row.definition);
      const rowStatistics = statisticsOf.get(row.name);
      if (indexed) catalog.set(row.name, { name: row.name, valid: row.valid, rows: Math.max(Number(row.rows), 0), ...indexed, ...(rowStatistics ? { statistics: rowStatistics } : {}) });
    }
    this.catalog = catalog;
    this.catalogReadAt = performance.now();
  }

  private requestBuild(collectionId: string, spec: RangeIndexSpec): void {
    const name = indexName(collectionId, spec);
    if (this.closed || this.queued.has(name) || this.failed.has(name)) return;
    if (performance.now() - (this.builtElsewhere.get(name) ?? -Infinity) < this.catalogRefreshMs) return;
    const prefix = collectionPrefix(collectionId);
    const taken = new Set([...this.catalog.keys(), ...this.queued.keys()].filter((known) => known.startsWith(prefix) && known !== name)).size;
    if (taken >= this.options.maxPerCollection) return;
    this.queued.set(name, { collectionId, spec });
    this.building ??= this.buildQueued().finally(() => {
      this.building = null;
    });
  }

  private async buildQueued(): Promise<void> {
    while (!this.closed) {
      const next = this.queued.entries().next();
      if (next.done) return;
      const [name, { collectionId, spec }] = next.value;
      const started = performance.now();
      this.current = name;
      try {
        const outcome = await this.build(name, collectionId, spec);
        if (outcome === 'built') {
          this.logger.info({ collectionId, field: spec.path.join('.'), type: spec.type, ms: Math.round(performance.now() - started) }, 'built a range index over chunk metadata');
          // Statistics of the index's expression, which only ANALYZE gathers (it samples a bounded
          // number of rows, however large the table).
          await this.sql('analyze chunks').catch((error: unknown) => this.logger.warn({ err: error }, 'could not analyze chunks after building a range index'));
        }
        if (outcome === 'building elsewhere') this.builtElsewhere.set(name, performance.now());
      } catch (error) {
        if (this.closed) return;
        this.failed.set(name, spec);
        this.logger.warn({ err: error, collectionId, field: spec.path.join('.'), type: spec.type }, 'could not build a range index over chunk metadata; range filters on the field go on without it');
        await this.dropIndex(name).catch(() => {});
      }
      this.current = null;
      this.queued.delete(name);
      if (this.closed) return;
      await this.readCatalog().catch(() => {});
    }
  }

  private async build(name: string, collectionId: string, spec: RangeIndexSpec): Promise<'built' | 'building elsewhere' | 'collection gone'> {
    const [live] = await this.sql('select 1 from collections where id = ?', [collectionId]);
    if (!live) return 'collection gone';
    // Every part of the statement is ours: `name` and the expression's path are checked characters,
    // the collection id a uuid. Concurrently: writes to chunks go on during the build.
    const create = `create index concurrently if not exists ${name} on chunks (${spec.expression}) where collection_id = '${collectionId}'::uuid`;
    await this.sql(create);
    if (!await this.isValid(name)) {
      const [inProgress] = await this.sql('select 1 from pg_stat_progress_create_index p join pg_class c on c.oid = p.index_relid where c.relname = ?', [name]);
      if (inProgress) return 'building elsewhere';
      await this.dropIndex(name);
      await this.sql(create);
      if (!await this.isValid(name)) throw new Error(`index ${name} is not valid after its build`);
    }
    // Deleted during the build: its drop may have found nothing to drop yet.
    const [stillLive] = await this.sql('select 1 from collections where id = ?', [collectionId]);
    if (!stillLive) {
      await this.dropIndex(name);
      return 'collection gone';
    }
    return 'built';
  }

  private async isValid(name: string): Promise<boolean> {
    const [state] = await this.sql<{ valid: boolean }>('select i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid where c.relname = ?', [name]);
    return state?.valid === true;
  }

  private async dropIndex(name: string): Promise<void> {
    await this.sql(`drop index concurrently if exists ${name}`);
    this.catalog.delete(name);
  }
}

/**
 * The field and type of one of our indexes, from its definition as PostgreSQL prints it:
 * `... USING btree (((metadata #> '{a,b}'::text[]))) WHERE ...`, or `#>>` and `COLLATE "C"` for
 * strings. The path's segments are of range-scope.ts's safe characters; a segment PostgreSQL would
 * read otherwise (`NULL`) is printed quoted.
 */
function indexedField(definition: string): { field: string; type: RangeValueType } | null {
  const match = /metadata (#>>?) '\{([^}]*)\}'::text\[\]/.exec(definition);
  if (!match) return null;
  const path = match[2]!.split(',').map((segment) => segment.replace(/^"(.*)"$/, '$1'));
  return { field: path.join('.'), type: match[1] === '#>>' ? 'string' : 'number' };
}
