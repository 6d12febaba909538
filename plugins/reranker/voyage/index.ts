/**
 * Voyage AI reranking (POST https://api.voyageai.com/v1/rerank): `{model, query, documents, top_k}`
 * → `{data: [{index, relevance_score}]}`. `reranking_model` `voyage/rerank-2.5`.
 */
import { remoteRerankerPlugin, relevanceScores, type RemoteRerankerSpec } from '../../../src/embedding/remote-reranker.js';

const spec: RemoteRerankerSpec = {
  provider: 'voyage',
  defaultBaseUrl: 'https://api.voyageai.com/v1',
  defaultModel: 'rerank-2.5',
  protocol: {
    path: 'rerank',
    body: (model, query, documents) => ({ model, query, documents, top_k: documents.length, truncation: true }),
    parse: relevanceScores,
  },
};

export const voyageRerankerPlugin = remoteRerankerPlugin(spec, 'Voyage AI rerankers (rerank-2.5, rerank-2.5-lite...); needs an API key');
