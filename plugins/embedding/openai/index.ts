/**
 * OpenAI embeddings (POST https://api.openai.com/v1/embeddings). A request carries at most 2048
 * inputs and 300,000 tokens summed over them (OpenAI API reference, "Create embeddings").
 * text-embedding-3 models shorten their vectors on request (`dimensions`); ada-002 cannot.
 */
import { openAiEmbeddingsProtocol } from '../../../src/embedding/openai-embeddings-protocol.js';
import { remoteEmbeddingPlugin, type RemoteEmbeddingPluginSpec } from '../../../src/embedding/remote-embedding-plugin.js';

const spec: RemoteEmbeddingPluginSpec = {
  provider: 'openai',
  defaultBaseUrl: 'https://api.openai.com/v1',
  models: [
    { model: 'text-embedding-3-small', dimension: 1536, minDimension: 1 },
    { model: 'text-embedding-3-large', dimension: 3072, minDimension: 1 },
    { model: 'text-embedding-ada-002', dimension: 1536 },
  ],
  protocol: (model, dimension, info) =>
    openAiEmbeddingsProtocol(model, { maxInputs: 2048, maxTokens: 300_000 }, info?.minDimension !== undefined && dimension !== info.dimension ? dimension : undefined),
};

export const openAiEmbeddingPlugin = remoteEmbeddingPlugin(spec, 'OpenAI embeddings API (text-embedding-3-small/-large, ada-002); needs an API key');
