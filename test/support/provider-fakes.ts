/**
 * A local HTTP server standing in for the model providers, with each one's real request and
 * response shapes (from their API references):
 *
 *   POST /openai/v1/embeddings      OpenAI: {model, input[], encoding_format, dimensions?} → {object, data:[{object, index, embedding}], model, usage:{prompt_tokens, total_tokens}}; ≤ 2048 inputs
 *   POST /compatible/v1/embeddings  Ollama/vLLM/TEI's OpenAI route: same shape, no `usage`, no key; ≤ 32 inputs (TEI's default)
 *   POST /cohere/v2/embed           Cohere v2: {model, texts[], input_type, embedding_types} → {id, embeddings:{float}, texts, meta:{billed_units:{input_tokens}}}; ≤ 96 texts
 *   POST /cohere/v2/rerank          Cohere: {model, query, documents[], top_n} → {id, results:[{index, relevance_score}], meta}
 *   POST /voyage/v1/embeddings      Voyage: {model, input[], input_type} → {object, data:[{object, embedding, index}], model, usage:{total_tokens}}; ≤ 1000 inputs
 *   POST /voyage/v1/rerank          Voyage: {model, query, documents[], top_k} → {object, data:[{index, relevance_score}], model, usage}
 *   POST /tei/rerank                text-embeddings-inference: {query, texts[]} → [{index, score}]
 *   POST /jina/v1/rerank            Jina: {model, query, documents[], top_n} → {model, usage, results:[{index, relevance_score, document}]}
 *
 * Errors have each provider's body shape too. Vectors are the `local` embedder's, so retrieval
 * through a fake behaves like retrieval with `local`. Faults (status codes with headers,
 * malformed JSON, hangs, vectors of the wrong length) are scripted per route with `failNext`.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashedTextVector } from '../../plugins/embedding/local/hashed-text-vector.js';

export type Route = 'openai' | 'compatible' | 'cohere' | 'voyage' | 'cohere-rerank' | 'voyage-rerank' | 'tei-rerank' | 'jina-rerank';

export type Fault =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  /** A body that is not JSON, such as a proxy's HTML error page. */
  | { status: number; text: string; contentType: string }
  | { malformed: true }
  | { hang: true }
  | { dimension: number };

export interface RecordedRequest {
  route: Route;
  path: string;
  authorization: string | undefined;
  body: any;
  at: number;
}

const PATHS: Record<string, Route> = {
  '/openai/v1/embeddings': 'openai',
  '/compatible/v1/embeddings': 'compatible',
  '/cohere/v2/embed': 'cohere',
  '/cohere/v2/rerank': 'cohere-rerank',
  '/voyage/v1/embeddings': 'voyage',
  '/voyage/v1/rerank': 'voyage-rerank',
  '/tei/rerank': 'tei-rerank',
  '/jina/v1/rerank': 'jina-rerank',
};

/** Native dimensions, as the providers document them. */
const NATIVE_DIMENSIONS: Record<string, number> = {
  'text-embedding-3-small': 1536, 'text-embedding-3-large': 3072, 'text-embedding-ada-002': 1536,
  'embed-english-v3.0': 1024, 'embed-english-light-v3.0': 384, 'embed-v4.0': 1536,
  'voyage-3.5': 1024, 'voyage-3.5-lite': 1024, 'voyage-3-large': 1024, 'nomic-embed-text': 768,
};

/** The `local` embedder's vector to eight significant digits, about what the providers send (OpenAI: -0.0069352165). */
function localVector(text: string, dimension: number): number[] {
  return Array.from(hashedTextVector(text, dimension), (value) => Number(value.toPrecision(8)));
}

const tokensOf = (text: string) => Math.max(1, Math.ceil(text.split(/\s+/).filter(Boolean).length * 1.3));
const words = (text: string) => text.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/** A deterministic relevance in [0, 1]: the share of query words the document holds. */
export function fakeRelevance(query: string, document: string): number {
  const queryWords = [...new Set(words(query))];
  const documentWords = new Set(words(document));
  if (queryWords.length === 0) return 0;
  return Math.round((queryWords.filter((word) => documentWords.has(word)).length / queryWords.length) * 1e4) / 1e4;
}

export interface ProviderFakeOptions {
  /** The key every hosted route demands (Bearer); the compatible routes take none. */
  apiKey: string;
  /** Milliseconds each answer waits. */
  latencyMs?: number;
  /**
   * The vector of a text (the `local` embedder's by default). Benchmarks pass a precomputed one,
   * so that the fake's own computing does not count as the service's time.
   */
  vectorOf?: (text: string, dimension: number) => number[];
}

export class ProviderFake {
  readonly requests: RecordedRequest[] = [];
  inFlight = 0;
  maxInFlight = 0;
  latencyMs: number;
  private readonly faults = new Map<Route, Fault[]>();
  private readonly server: http.Server;
  private port = 0;

  constructor(private readonly options: ProviderFakeOptions) {
    this.latencyMs = options.latencyMs ?? 0;
    this.server = http.createServer((request, response) => void this.handle(request, response));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Base URL of a provider, version segment included, as a collection's `*_base_url` takes it. */
  baseUrl(provider: 'openai' | 'compatible' | 'cohere' | 'voyage' | 'tei' | 'jina'): string {
    const suffix = { openai: '/openai/v1', compatible: '/compatible/v1', cohere: '/cohere/v2', voyage: '/voyage/v1', tei: '/tei', jina: '/jina/v1' }[provider];
    return `http://127.0.0.1:${this.port}${suffix}`;
  }

  /** The next `count` requests to `route` meet `fault` instead of a normal answer. */
  failNext(route: Route, fault: Fault, count = 1): void {
    this.faults.set(route, [...(this.faults.get(route) ?? []), ...Array.from({ length: count }, () => fault)]);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  requestsTo(route: Route): RecordedRequest[] {
    return this.requests.filter((request) => request.route === route);
  }

  reset(): void {
    this.requests.length = 0;
    this.maxInFlight = 0;
    this.faults.clear();
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const route = PATHS[request.url ?? ''];
    if (!route || request.method !== 'POST') return this.send(response, 404, { error: 'not found' });
    let body: any;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return this.send(response, 400, { error: 'request body is not JSON' });
    }
    this.requests.push({ route, path: request.url!, authorization: request.headers.authorization, body, at: Date.now() });
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
      const fault = this.faults.get(route)?.shift();
      if (fault && 'hang' in fault) return; // never answers; the client's timeout must end it
      if (fault && 'malformed' in fault) {
        response.writeHead(200, { 'content-type': 'application/json' });
        return void response.end('{"data": [{"embedding": [0.1, 0.2');
      }
      if (fault && 'text' in fault) {
        response.writeHead(fault.status, { 'content-type': fault.contentType });
        return void response.end(fault.text);
      }
      if (fault && 'status' in fault) return this.send(response, fault.status, fault.body ?? { error: { message: `fake ${fault.status}` } }, fault.headers);
      const refusal = this.authorize(route, request.headers.authorization);
      if (refusal) return this.send(response, 401, refusal);
      const [status, answer] = this.answer(route, body, fault && 'dimension' in fault ? fault.dimension : undefined);
      this.send(response, status, answer);
    } finally {
      this.inFlight -= 1;
    }
  }

  private authorize(route: Route, authorization: string | undefined): unknown {
    if (route === 'compatible' || route === 'tei-rerank') return null;
    if (authorization === `Bearer ${this.options.apiKey}`) return null;
    const given = authorization?.replace(/^Bearer /, '') ?? '';
    // Like OpenAI, the refusal names the key it was given: the service must not pass that on.
    if (route === 'openai') return { error: { message: `Incorrect API key provided: ${given}. You can find your API key at https://platform.openai.com/account/api-keys.`, type: 'invalid_request_error', code: 'invalid_api_key' } };
    if (route.startsWith('cohere')) return { message: `invalid api token ${given}` };
    return { detail: `Provided API key is invalid: ${given}` };
  }

  private send(response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (response.destroyed) return;
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  }

  private vectors(texts: string[], model: string, dimension: number | undefined, wrongDimension: number | undefined): number[][] {
    const size = wrongDimension ?? dimension ?? NATIVE_DIMENSIONS[model] ?? 768;
    return texts.map((text) => (this.options.vectorOf ?? localVector)(text, size));
  }

  private answer(route: Route, body: any, wrongDimension: number | undefined): [number, unknown] {
    switch (route) {
      case 'openai':
      case 'compatible': {
        const limit = route === 'openai' ? 2048 : 32;
        const input: string[] = Array.isArray(body.input) ? body.input : [body.input];
        if (input.length > limit) return [400, { error: { message: `'$.input' is invalid: at most ${limit} inputs are allowed, got ${input.length}`, type: 'invalid_request_error' } }];
        if (route === 'openai' && !NATIVE_DIMENSIONS[body.model]) {
          return [404, { error: { message: `The model \`${body.model}\` does not exist or you do not have access to it.`, type: 'invalid_request_error', code: 'model_not_found' } }];
        }
        const vectors = this.vectors(input, body.model, body.dimensions, wrongDimension);
        const tokens = input.reduce((sum, text) => sum + tokensOf(text), 0);
        return [200, {
          object: 'list', data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })).reverse(), model: body.model,
          ...(route === 'openai' ? { usage: { prompt_tokens: tokens, total_tokens: tokens } } : {}),
        }];
      }
      case 'cohere': {
        if (!Array.isArray(body.texts) || body.texts.length > 96) return [400, { message: `invalid request: total number of texts must be at most 96 - received ${body.texts?.length}` }];
        if (!['search_document', 'search_query', 'classification', 'clustering'].includes(body.input_type)) return [400, { message: 'invalid request: input_type is required for embed v3 models' }];
        const vectors = this.vectors(body.texts, body.model, body.output_dimension, wrongDimension);
        return [200, {
          id: randomUUID(), embeddings: { float: vectors }, texts: body.texts, response_type: 'embeddings_by_type',
          meta: { api_version: { version: '2' }, billed_units: { input_tokens: body.texts.reduce((sum: number, text: string) => sum + tokensOf(text), 0) } },
        }];
      }
      case 'voyage': {
        const input: string[] = Array.isArray(body.input) ? body.input : [body.input];
        if (input.length > 1000) return [400, { detail: `The list of texts must have at most 1000 items, got ${input.length}.` }];
        if (body.input_type !== null && body.input_type !== undefined && !['document', 'query'].includes(body.input_type)) return [400, { detail: 'input_type must be query, document or null' }];
        const vectors = this.vectors(input, body.model, body.output_dimension, wrongDimension);
        return [200, {
          object: 'list', data: vectors.map((embedding, index) => ({ object: 'embedding', embedding, index })), model: body.model,
          usage: { total_tokens: input.reduce((sum, text) => sum + tokensOf(text), 0) },
        }];
      }
      case 'cohere-rerank':
      case 'voyage-rerank':
      case 'jina-rerank': {
        const documents: string[] = body.documents ?? [];
        const scored = documents.map((text, index) => ({ index, relevance_score: fakeRelevance(body.query, text) })).sort((a, b) => b.relevance_score - a.relevance_score);
        if (route === 'cohere-rerank') return [200, { id: randomUUID(), results: scored.slice(0, body.top_n ?? scored.length), meta: { api_version: { version: '2' }, billed_units: { search_units: 1 } } }];
        if (route === 'voyage-rerank') return [200, { object: 'list', data: scored.slice(0, body.top_k ?? scored.length), model: body.model, usage: { total_tokens: 10 } }];
        return [200, { model: body.model, usage: { total_tokens: 10 }, results: scored.slice(0, body.top_n ?? scored.length).map((item) => ({ ...item, document: { text: documents[item.index] } })) }];
      }
      case 'tei-rerank': {
        const texts: string[] = body.texts ?? [];
        return [200, texts.map((text, index) => ({ index, score: fakeRelevance(body.query, text) })).sort((a, b) => b.score - a.score)];
      }
    }
  }
}

export async function startProviderFake(options: ProviderFakeOptions): Promise<ProviderFake> {
  return new ProviderFake(options).start();
}
