/**
 * Voyage AI embeddings (POST https://api.voyageai.com/v1/embeddings). A request carries at most
 * 1,000 texts and, summed over them, 1M tokens (voyage-3.5-lite, voyage-4-lite), 320K (voyage-3.5,
 * voyage-4) or 120K (voyage-3-large, voyage-code-3) (Voyage API reference). `input_type` is
 * `document` or `query`; current models offer 256, 512, 1024 or 2048 dimensions (`output_dimension`).
 */
import { remoteEmbeddingPlugin, type RemoteEmbeddingPluginSpec } from '../../../src/embedding/remote-embedding-plugin.js';
import { parseOpenAiStyleEmbeddings } from '../../../src/embedding/openai-embeddings-protocol.js';

const FLEXIBLE = [256, 512, 2048];
const TOKENS_PER_REQUEST: Record<string, number> = {
  'voyage-3.5-lite': 1_000_000, 'voyage-4-lite': 1_000_000, 'voyage-3.5': 320_000, 'voyage-4': 320_000,
};

const spec: RemoteEmbeddingPluginSpec = {
  provider: 'voyage',
  defaultBaseUrl: 'https://api.voyageai.com/v1',
  models: [
    { model: 'voyage-3.5', dimension: 1024, dimensions: FLEXIBLE },
    { model: 'voyage-3.5-lite', dimension: 1024, dimensions: FLEXIBLE },
    { model: 'voyage-3-large', dimension: 1024, dimensions: FLEXIBLE },
    { model: 'voyage-code-3', dimension: 1024, dimensions: FLEXIBLE },
    { model: 'voyage-4', dimension: 1024, dimensions: FLEXIBLE },
    { model: 'voyage-4-lite', dimension: 1024, dimensions: FLEXIBLE },
    { model: 'voyage-4-large', dimension: 1024, dimensions: FLEXIBLE },
  ],
  protocol: (model, dimension, info) => ({
    // Models not named above get the strictest budget.
    limits: { maxInputs: 1000, maxTokens: TOKENS_PER_REQUEST[model] ?? 120_000 },
    request: (texts, purpose) => ({
      path: 'embeddings',
      body: { model, input: texts, input_type: purpose, truncation: true, ...(info?.dimensions && dimension !== undefined && dimension !== info.dimension ? { output_dimension: dimension } : {}) },
    }),
    parse: parseOpenAiStyleEmbeddings,
  }),
};

export const voyageEmbeddingPlugin = remoteEmbeddingPlugin(spec, 'Voyage AI embeddings (voyage-3.5, voyage-3-large, voyage-code-3, voyage-4...); needs an API key');
