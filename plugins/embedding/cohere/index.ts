/**
 * Cohere Embed API v2 (POST https://api.cohere.com/v2/embed): at most 96 texts a request;
 * `input_type` is `search_document` for chunks and `search_query` for queries (v3 models and later
 * require it); embed-v4.0 shortens its vectors on request (`output_dimension`). Billed tokens come
 * back in `meta.billed_units.input_tokens`.
 */
import { remoteEmbeddingPlugin, type RemoteEmbeddingPluginSpec } from '../../../src/embedding/remote-embedding-plugin.js';
import { at, listAt, tokenCount } from '../../../src/embedding/remote-embedding-model.js';

const spec: RemoteEmbeddingPluginSpec = {
  provider: 'cohere',
  defaultBaseUrl: 'https://api.cohere.com/v2',
  models: [
    { model: 'embed-english-v3.0', dimension: 1024 },
    { model: 'embed-multilingual-v3.0', dimension: 1024 },
    { model: 'embed-english-light-v3.0', dimension: 384 },
    { model: 'embed-multilingual-light-v3.0', dimension: 384 },
    { model: 'embed-v4.0', dimension: 1536, dimensions: [256, 512, 1024] },
  ],
  protocol: (model, dimension, info) => ({
    limits: { maxInputs: 96 },
    request: (texts, purpose) => ({
      path: 'embed',
      body: {
        model, texts, input_type: purpose === 'query' ? 'search_query' : 'search_document', embedding_types: ['float'], truncate: 'END',
        ...(info?.dimensions && dimension !== undefined && dimension !== info.dimension ? { output_dimension: dimension } : {}),
      },
    }),
    parse: (response) => ({ vectors: listAt(response, 'embeddings', 'float'), tokens: tokenCount(at(response, 'meta', 'billed_units', 'input_tokens')) }),
  }),
};

export const cohereEmbeddingPlugin = remoteEmbeddingPlugin(spec, 'Cohere Embed API v2 (embed-english-v3.0, embed-multilingual-v3.0, embed-v4.0...); needs an API key');
