import { AppError, ProviderError } from '../errors.js';
import type { EmbeddingModel } from '../plugins.js';

/**
 * Texts handed to the model per call; progress is written as calls complete. The model spreads
 * each call over as many requests as it may keep in flight (embedding-batches.ts), so calls are
 * large: a claimed batch (64 documents) usually fits in one, and small calls would cut requests
 * below the provider's batch size and send more of them.
 */
const TEXTS_PER_CALL = 1024;

/** Vectors that cannot go into the collection: retrying will not change them. */
export class EmbeddingShapeError extends Error {}

/** Whether another attempt may succeed: provider 429/5xx/timeouts yes, a bad key or a wrong dimension no. */
export function isRetryableEmbeddingFailure(error: unknown): boolean {
  if (error instanceof ProviderError) return error.retryable;
  return !(error instanceof AppError || error instanceof EmbeddingShapeError);
}

/** Embeds the chunk texts of one claimed batch, in order, checking each vector against the collection's dimension. */
export async function embedChunkTexts(
  model: EmbeddingModel, texts: readonly string[], dimension: number, onProgress: (embedded: number) => Promise<void>,
): Promise<Float32Array[]> {
  let embedded = 0;
  const calls: Array<Promise<Float32Array[]>> = [];
  for (let start = 0; start < texts.length; start += TEXTS_PER_CALL) {
    const slice = texts.slice(start, start + TEXTS_PER_CALL);
    calls.push(model.embed(slice, 'document').then(async (result) => {
      if (result.vectors.length !== slice.length) throw new EmbeddingShapeError(`the model returned ${result.vectors.length} vectors for ${slice.length} chunks`);
      const wrong = result.vectors.find((vector) => vector.length !== dimension);
      if (wrong) throw new EmbeddingShapeError(`the model returned ${wrong.length}-dimensional vectors, but the collection's dimension is ${dimension}`);
      embedded += slice.length;
      await onProgress(embedded);
      return result.vectors;
    }));
  }
  return (await Promise.all(calls)).flat();
}
