/**
 * Cohere Rerank API v2 (POST https://api.cohere.com/v2/rerank): `{model, query, documents, top_n}`
 * → `{results: [{index, relevance_score}]}`. `reranking_model` `cohere/rerank-v3.5`.
 */
import { remoteRerankerPlugin, relevanceScores, type RemoteRerankerSpec } from '../../../src/embedding/remote-reranker.js';

const spec: RemoteRerankerSpec = {
  provider: 'cohere',
  defaultBaseUrl: 'https://api.cohere.com/v2',
  defaultModel: 'rerank-v3.5',
  protocol: {
    path: 'rerank',
    body: (model, query, documents) => ({ model, query, documents, top_n: documents.length }),
    parse: relevanceScores,
  },
};

export const cohereRerankerPlugin = remoteRerankerPlugin(spec, 'Cohere Rerank (rerank-v3.5, rerank-english-v3.0...); needs an API key');
