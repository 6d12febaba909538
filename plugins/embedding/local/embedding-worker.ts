/**
 * The thread side of embedding-threads.ts: embeds a batch of texts into one Float64Array (the precision hashedTextVector computes in, so threaded and in-place vectors are identical)
 * (row-major, `dimension` values a text) and hands its buffer back without copying.
 */
import { parentPort } from 'node:worker_threads';
import { hashedTextVector } from './hashed-text-vector.js';

export interface EmbeddingTask {
  id: number;
  texts: string[];
  dimension: number;
}

export type EmbeddingAnswer = { id: number; matrix: Float64Array } | { id: number; error: string };

parentPort!.on('message', ({ id, texts, dimension }: EmbeddingTask) => {
  try {
    const matrix = new Float64Array(texts.length * dimension);
    texts.forEach((text, row) => matrix.set(hashedTextVector(text, dimension), row * dimension));
    parentPort!.postMessage({ id, matrix } satisfies EmbeddingAnswer, [matrix.buffer]);
  } catch (error) {
    parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies EmbeddingAnswer);
  }
});
