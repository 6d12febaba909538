import type { BatchLimits } from './embedding-batches.js';
import { at, listAt, tokenCount, type EmbeddingProtocol } from './remote-embedding-model.js';

/**
 * POST {base}/embeddings as OpenAI defines it, which Ollama, vLLM, LocalAI and TEI also speak:
 * `{model, input: [...], encoding_format, dimensions?}` → `{data: [{index, embedding}], usage: {prompt_tokens}}`.
 * Items are put back in `index` order, since the order of `data` is not promised.
 */
export function openAiEmbeddingsProtocol(model: string, limits: BatchLimits, dimensions?: number): EmbeddingProtocol {
  return {
    limits,
    request: (texts) => ({
      path: 'embeddings',
      body: { model, input: texts, encoding_format: 'float', ...(dimensions === undefined ? {} : { dimensions }) },
    }),
    parse: parseOpenAiStyleEmbeddings,
  };
}

/** `{data: [{index, embedding}], usage: {prompt_tokens | total_tokens}}`, the answer of OpenAI and of providers shaped like it (Voyage). */
export const parseOpenAiStyleEmbeddings: EmbeddingProtocol['parse'] = (response) => {
  const items = listAt(response, 'data').map((item, position) => ({ index: Number(at(item, 'index') ?? position), embedding: at(item, 'embedding') }));
  items.sort((a, b) => a.index - b.index);
  // Each text's vector is found by its index: a duplicate or missing one would put vectors on the
  // wrong chunks (and in the embedding cache, for every collection).
  const misplaced = items.findIndex((item, position) => item.index !== position);
  if (misplaced >= 0) throw new Error(`"data" indexes must be 0 to ${items.length - 1}, one each; found ${items[misplaced]!.index} at position ${misplaced}`);
  return { vectors: items.map((item) => item.embedding), tokens: tokenCount(at(response, 'usage', 'prompt_tokens') ?? at(response, 'usage', 'total_tokens')) };
};
