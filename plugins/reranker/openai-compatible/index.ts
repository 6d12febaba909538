/**
 * Self-hosted rerankers at `{reranking_base_url}/rerank` (api-contract 3). Two request shapes are
 * in use: text-embeddings-inference takes `{query, texts}` and answers `[{index, score}]`; Jina and
 * servers copying Cohere take `{model, query, documents, top_n}` and answer `{results: [{index,
 * relevance_score}]}`. Both ignore fields they do not know, so the body carries both and either
 * answer is read.
 */
import { remoteRerankerPlugin, relevanceScores, type RemoteRerankerSpec } from '../../../src/embedding/remote-reranker.js';

const spec: RemoteRerankerSpec = {
  provider: 'openai_compatible',
  protocol: {
    path: 'rerank',
    body: (model, query, documents) => ({ model, query, documents, top_n: documents.length, texts: documents, raw_scores: false, return_text: false }),
    parse: relevanceScores,
  },
};

export const openAiCompatibleRerankerPlugin = remoteRerankerPlugin(spec, 'Self-hosted /rerank endpoints (text-embeddings-inference, Jina-style servers); needs reranking_base_url');
