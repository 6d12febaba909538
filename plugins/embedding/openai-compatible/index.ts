/**
 * Self-hosted servers that speak OpenAI's embeddings protocol: Ollama (`http://localhost:11434/v1`),
 * vLLM, LocalAI, text-embeddings-inference. `embedding_base_url` is required and `/embeddings` is
 * appended (api-contract 3); the key is optional. Requests carry at most 32 inputs, the default
 * `--max-client-batch-size` of text-embeddings-inference, the strictest of these servers.
 */
import { openAiEmbeddingsProtocol } from '../../../src/embedding/openai-embeddings-protocol.js';
import { remoteEmbeddingPlugin, type RemoteEmbeddingPluginSpec } from '../../../src/embedding/remote-embedding-plugin.js';

const spec: RemoteEmbeddingPluginSpec = {
  provider: 'openai_compatible',
  models: [],
  protocol: (model) => openAiEmbeddingsProtocol(model, { maxInputs: 32 }),
};

export const openAiCompatibleEmbeddingPlugin = remoteEmbeddingPlugin(spec, 'Any server speaking the OpenAI embeddings protocol (Ollama, vLLM, LocalAI, TEI); needs embedding_base_url, model and dimension');
