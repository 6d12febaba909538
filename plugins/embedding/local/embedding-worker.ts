/**
 * The thread side of embedding-threads.ts: embeds a batch of texts into one Float32Array, row-major,
 * `dimension` values a text (rounded from hashedTextVector's float64 as in-place vectors are, so
 * both are identical), and hands its buffer back without copying.
 */
import { parentPort } from 'node:worker_threads';
import { errorFields, READY_ID, type ThreadAnswer } from '../../../src/threads/thread-requests.js';
import { hashedTextVector } from './hashed-text-vector.js';

interface EmbeddingTask {
  id: number;
  texts: string[];
  dimension: number;
}

const port = parentPort!;
port.on('message', ({ id, texts, dimension }: EmbeddingTask) => {
  try {
    const matrix = new Float32Array(texts.length * dimension);
    texts.forEach((text, row) => matrix.set(hashedTextVector(text, dimension), row * dimension));
    port.postMessage({ id, result: matrix } satisfies ThreadAnswer, [matrix.buffer]);
  } catch (error) {
    port.postMessage({ id, error: errorFields(error) } satisfies ThreadAnswer);
  }
});
port.postMessage({ id: READY_ID, result: null } satisfies ThreadAnswer);
