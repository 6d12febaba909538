import { BadRequestError, ProviderError } from '../errors.js';
import type { PluginDefinition, PluginDependencies, PluginKinds, RerankCandidate, Reranker } from '../plugins.js';
import { endpoint, ProviderHttpClient } from './provider-http-client.js';
import { at, listAt } from './remote-embedding-model.js';

/** One provider's rerank wire format. */
export interface RerankProtocol {
  /** Path below the base URL, e.g. `rerank`. */
  path: string;
  body(model: string, query: string, documents: string[]): unknown;
  /** `{index, score}` pairs; throws on a body of another shape. */
  parse(response: unknown): Array<{ index: number; score: unknown }>;
}

export interface RemoteRerankerSpec {
  provider: string;
  defaultBaseUrl?: string;
  defaultModel?: string;
  protocol: RerankProtocol;
}

/** `{results: [{index, relevance_score}]}` (Cohere, Jina) or `{data: [...]}` (Voyage) or a bare list of `{index, score}` (TEI). */
export function relevanceScores(response: unknown): Array<{ index: number; score: unknown }> {
  const items = Array.isArray(response) ? response : at(response, 'results') !== undefined ? listAt(response, 'results') : listAt(response, 'data');
  return items.map((item) => ({ index: Number(at(item, 'index')), score: at(item, 'relevance_score') ?? at(item, 'score') }));
}

class RemoteReranker implements Reranker {
  constructor(
    readonly name: string,
    private readonly model: string,
    private readonly baseUrl: string,
    private readonly protocol: RerankProtocol,
    private readonly client: ProviderHttpClient,
  ) {}

  async rerank(query: string, candidates: RerankCandidate[]): Promise<number[]> {
    if (candidates.length === 0) return [];
    const response = await this.client.postJson(
      endpoint(this.baseUrl, this.protocol.path), this.protocol.body(this.model, query, candidates.map((candidate) => candidate.text)), 'interactive',
    );
    let pairs: ReturnType<RerankProtocol['parse']>;
    try {
      pairs = this.protocol.parse(response);
    } catch (error) {
      throw new ProviderError(this.client.redact(`${this.name} answered with an unexpected body: ${(error as Error).message}`), false);
    }
    const scores = new Array<number>(candidates.length).fill(Number.NEGATIVE_INFINITY);
    for (const { index, score } of pairs) {
      if (!Number.isInteger(index) || index < 0 || index >= candidates.length) {
        throw new ProviderError(`${this.name} answered with a score for no candidate (index ${index})`, false);
      }
      if (typeof score !== 'number' || !Number.isFinite(score)) {
        // The value as sent, cut and with any key removed: the provider's body is not ours to trust.
        const sent = String(JSON.stringify(score)).slice(0, 100);
        throw new ProviderError(this.client.redact(`${this.name} answered a score that is not a finite number for candidate ${index}: ${sent}`), false);
      }
      scores[index] = score;
    }
    if (scores.includes(Number.NEGATIVE_INFINITY)) throw new ProviderError(`${this.name} left some candidates without a score`, false);
    return scores;
  }
}

/** The reranker plugin of an HTTP provider, named after it. */
export function remoteRerankerPlugin(spec: RemoteRerankerSpec, description: string): PluginDefinition<'reranker'> {
  return { kind: 'reranker', name: spec.provider, description, create: (config, deps) => createRemoteReranker(spec, config, deps) };
}

function createRemoteReranker(spec: RemoteRerankerSpec, config: PluginKinds['reranker']['config'], deps: PluginDependencies): Reranker {
  const model = config.model ?? spec.defaultModel;
  if (!model) throw new BadRequestError(`reranking_model must name a model for ${spec.provider} (${spec.provider}/<model>)`);
  const baseUrl = config.baseUrl ?? spec.defaultBaseUrl;
  if (!baseUrl) throw new BadRequestError(`reranking_base_url is required for ${spec.provider} reranking`);
  const client = new ProviderHttpClient({ provider: spec.provider, apiKey: config.apiKey, policy: deps.remoteCalls, fetch: deps.fetch, logger: deps.logger });
  return new RemoteReranker(spec.provider, model, baseUrl, spec.protocol, client);
}
