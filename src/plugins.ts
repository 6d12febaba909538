/**
 * Plugin contracts. Core code depends on these interfaces only; implementations live in
 * plugins/<kind>/<name>/ and are listed once in src/plugin-registry.ts.
 * A plugin module exports one definition: `{kind, name, create(config, deps)}`.
 */

// ---------- embedding ----------

export interface EmbeddingResult {
  /** One per text, in order; float32, the precision every vector store here indexes at. */
  vectors: Float32Array[];
  /** Tokens the provider billed for (0 for local models). */
  tokens: number;
}

export interface EmbeddingModel {
  readonly provider: string;
  readonly model: string;
  readonly dimension: number;
  /** Embeds texts in order; implementations batch within their provider's limits. */
  embed(texts: string[], purpose: 'document' | 'query'): Promise<EmbeddingResult>;
}

export interface EmbeddingConfig {
  model?: string | undefined;
  dimension?: number | undefined;
  apiKey?: string | undefined;
  baseUrl?: string | undefined;
  /** Connection tests: take whatever dimension the model answers with (reported, not checked) when none is known. */
  anyDimension?: boolean | undefined;
}

/** A model an embedding plugin knows; the first one a plugin lists is its default. */
export interface EmbeddingModelInfo {
  model: string;
  /** The dimension the model produces when not asked for another. */
  dimension: number;
  /** Other dimensions the provider can produce for this model (`output_dimension`). */
  dimensions?: readonly number[];
  /** Any dimension from this one up to `dimension` can be asked for (OpenAI's `dimensions`). */
  minDimension?: number;
}

// ---------- parsing ----------

export type ElementType = 'title' | 'heading' | 'paragraph' | 'list' | 'table' | 'code' | 'image' | 'page_break';

/** A structural piece of a parsed document, in reading order. */
export interface DocumentElement {
  type: ElementType;
  text: string;
  /** Headings above this element, outermost first. */
  headingPath: string[];
  /** Heading depth (1-6) for `heading` elements. */
  level?: number;
  page?: number;
  metadata?: Record<string, unknown>;
  /** The picture of an `image` element; its `text` holds the alt text or caption, if any. */
  image?: { data: Buffer; contentType: string };
  /**
   * For a `table` whose first line of `text` is its header row: that line. A chunk that continues
   * the table past its start carries it (chunk metadata `table_header`) and is embedded with it, so
   * its rows keep their column names.
   */
  tableHeader?: string;
}

export interface ParsedDocument {
  elements: DocumentElement[];
  /** Title found in the document itself (first h1, <title>, PDF info...). */
  title?: string;
  /**
   * What the file says about itself (front matter; `author`, `description`, `keywords`,
   * `created_at`, `modified_at` from document properties; PDF `pages`...). Stored as the document's
   * `source_metadata`; its strings, numbers, booleans and lists of them also go onto every chunk's
   * metadata, beneath the chunk's own keys and the upload metadata (src/ingestion/source-metadata).
   */
  metadata?: Record<string, unknown>;
  /**
   * Files the document carries (an email's attachments): each is read by the parser its content
   * and name choose, and its elements follow the document's (src/ingestion/attached-files.ts).
   */
  attachments?: AttachedFile[];
}

export interface AttachedFile {
  filename: string;
  /** As the carrying document declares it. */
  contentType: string;
  data: Buffer;
}

export interface ParserInput {
  filename: string;
  contentType: string;
  data: Buffer;
}

export interface Parser {
  readonly name: string;
  /** Content types this parser reads (`text/markdown`...). */
  readonly contentTypes: readonly string[];
  /** File extensions this parser reads, lowercase without the dot. */
  readonly extensions: readonly string[];
  /** Its files may hold pictures of text (scanned pages), which need OCR: said when one yields no text. */
  readonly mayHoldScans?: boolean;
  parse(input: ParserInput): Promise<ParsedDocument>;
}

// ---------- vector store ----------

/** A metadata filter in the language of api-contract section 3, already validated (src/search/filters). */
export type { MetadataFilter } from './search/filters/filter-types.js';
import type { MetadataFilter } from './search/filters/filter-types.js';

export interface VectorRecord {
  /** The chunk's internal key: unique across the instance, stable for the chunk's life. */
  key: number;
  collectionId: string;
  documentId: string | null;
  embedding: Float32Array;
  /** The chunk's filterable metadata (document metadata merged with the chunk's own). */
  metadata: Record<string, unknown>;
  /** Value of the collection's `tenant_field` for this chunk, or null when the collection has none. */
  tenant: string | null;
}

export interface VectorSearchRequest {
  collectionId: string;
  embedding: Float32Array;
  topK: number;
  filter?: MetadataFilter | undefined;
  /** When the collection has a tenant field, only this tenant's vectors may be returned. */
  tenant?: string | null | undefined;
  /**
   * When given, only these keys may be returned (a query scoped to some documents): the store
   * ranks them exactly, as the list is the chunks of a few documents, not a share of the collection.
   */
  keys?: readonly number[] | undefined;
}

export interface VectorHit {
  key: number;
  /** Cosine similarity in [-1, 1]. */
  score: number;
}

export interface VectorStore {
  readonly name: string;
  /** Loads or creates what the store needs to hold `dimension`-sized vectors for this collection. */
  ensureCollection(collectionId: string, dimension: number): Promise<void>;
  /** Inserts or replaces by key. */
  upsert(records: VectorRecord[]): Promise<void>;
  delete(collectionId: string, keys: number[]): Promise<void>;
  dropCollection(collectionId: string): Promise<void>;
  /** Nearest vectors by cosine similarity, best first, honouring filter and tenant exactly. */
  search(request: VectorSearchRequest): Promise<VectorHit[]>;
  /** Number of vectors stored for a collection. */
  count(collectionId: string): Promise<number>;
  /** What an operator wants to know of one collection's vectors (GET /v1/admin/vector-storage). */
  describe(collectionId: string): Promise<VectorStorageDetails>;
  /** The store's search settings, shown by GET /v1/admin/vector-storage. */
  readonly settings?: Record<string, number | string>;
  close(): Promise<void>;
}

export interface VectorStorageDetails {
  vectors: number;
  /**
   * An in-process index: whether it is in memory now, whether it came from a graph saved at the
   * last shutdown or was rebuilt from the database, how long loading took, its approximate size,
   * whether its graph can be searched and how many rows it has not taken in yet.
   */
  memory_index?: {
    loaded: boolean;
    source?: 'snapshot' | 'rebuild';
    load_seconds?: number;
    approximate_bytes?: number;
    graph_usable?: boolean;
    rows_awaiting_graph?: number;
  };
}

// ---------- reranking ----------

export interface RerankCandidate {
  id: string;
  text: string;
}

export interface Reranker {
  readonly name: string;
  /**
   * Returns a relevance score per candidate, same order as given. Candidates come in first-stage
   * order, best first, so a reranker may keep that order as a prior (the `local` one does).
   */
  rerank(query: string, candidates: RerankCandidate[]): Promise<number[]>;
}

// ---------- language models ----------

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
  /** Pictures that go with `content`; only models with `vision` read them. */
  images?: ReadonlyArray<{ data: Buffer; contentType: string }>;
}

export interface LanguageModel {
  readonly name: string;
  /** The model reads `images` on messages (used to caption image elements). */
  readonly vision?: boolean;
  complete(messages: ChatMessage[], options?: { maxTokens?: number }): Promise<string>;
  stream(messages: ChatMessage[], options?: { maxTokens?: number }): AsyncIterable<string>;
}

// ---------- connectors ----------

export interface ConnectorObject {
  key: string;
  etag: string;
  size: number;
  lastModified: Date;
}

export interface Connector {
  readonly name: string;
  list(): AsyncIterable<ConnectorObject>;
  read(key: string): Promise<Buffer>;
}

// ---------- plugin definitions ----------

export interface PluginKinds {
  embedding: { config: EmbeddingConfig; instance: EmbeddingModel };
  parser: { config: Record<string, never>; instance: Parser };
  'vector-store': { config: Record<string, unknown>; instance: VectorStore };
  reranker: { config: { model?: string; apiKey?: string; baseUrl?: string }; instance: Reranker };
  llm: { config: { model?: string; apiKey?: string; baseUrl?: string }; instance: LanguageModel };
  connector: { config: Record<string, unknown>; instance: Connector };
}

export type PluginKind = keyof PluginKinds;

export interface PluginDependencies {
  /**
   * Runs SQL on the service database (for plugins such as pgvector that keep data there), with
   * knex-style `?` placeholders. `transaction` runs several statements on one connection.
   */
  sql?: SqlRunner;
  fetch?: typeof fetch;
  /** Timeouts, retries and requests in flight of plugins that call a remote API. */
  remoteCalls?: RemoteCallPolicy;
  logger?: PluginLogger;
  /** A directory of the plugin's own for derived files it can rebuild (never the source of truth). */
  stateDirectory?: string;
}

export interface RemoteCallPolicy {
  /** One attempt of one HTTP request, response body included. */
  timeoutMs: number;
  /** Further attempts after a 429, a 5xx, a timeout or a connection failure. */
  maxRetries: number;
  /** Requests one plugin instance keeps in flight at most. */
  concurrency: number;
  /**
   * The most a query's call (its embedding, its reranking) may take, retries and the wait for a
   * free connection included; ingestion's calls are bound by the attempts only. None when absent.
   */
  queryTimeoutMs?: number;
}

export interface PluginLogger {
  warn(details: Record<string, unknown>, message: string): void;
  info(details: Record<string, unknown>, message: string): void;
  debug(details: Record<string, unknown>, message: string): void;
}

export interface SqlRunner {
  <Row = Record<string, unknown>>(query: string, params?: unknown[]): Promise<Row[]>;
  transaction<T>(work: (sql: <Row = Record<string, unknown>>(query: string, params?: unknown[]) => Promise<Row[]>) => Promise<T>): Promise<T>;
  /** 'pglite' for the embedded database, 'postgresql' otherwise. */
  readonly dialect: 'pglite' | 'postgresql';
}

export interface PluginDefinition<K extends PluginKind = PluginKind> {
  kind: K;
  name: string;
  description: string;
  /** Embedding plugins: the models they know, with their dimensions. */
  models?: readonly EmbeddingModelInfo[];
  create(config: PluginKinds[K]['config'], deps: PluginDependencies): PluginKinds[K]['instance'];
}
