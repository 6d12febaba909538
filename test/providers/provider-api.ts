/** Helpers shared by the provider tests: a corpus, and the HTTP calls they repeat. */
import type { App } from '../../src/app.js';
import { multipartUpload, waitForIngestion } from '../support/test-app.js';

const TOPICS = ['lighthouse', 'sourdough', 'glacier', 'violin', 'orchard', 'volcano', 'submarine', 'telescope', 'beehive', 'canyon', 'harbour', 'meteor'];
const ACTIONS = ['drifts', 'glows', 'rests', 'hums', 'waits', 'turns', 'shines', 'sleeps'];

/** `count` distinct paragraphs of 60-99 characters, so that chunk_size 100 makes one chunk of each. */
export function paragraphs(count: number, tag = 'note'): string[] {
  return Array.from({ length: count }, (_, index) => {
    const topic = TOPICS[index % TOPICS.length]!;
    return `${tag} ${index}: the ${topic} ${ACTIONS[index % ACTIONS.length]} beside marker ${index * 7 + 3} in the quiet valley tonight.`;
  });
}

/** A collection body whose chunks are single paragraphs. */
export const ONE_PARAGRAPH_CHUNKS = { chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' } as const;

export interface Answer {
  statusCode: number;
  body: string;
  json(): any;
}

export function providerApi(app: App, headers: Record<string, string>, onAnswer: (answer: Answer) => void = () => undefined) {
  const send = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown): Promise<Answer> => {
    const answer = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
    onAnswer(answer);
    return answer;
  };
  const ok = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, status = 200) => {
    const answer = await send(method, url, payload);
    if (answer.statusCode !== status) throw new Error(`${method} ${url}: expected ${status}, got ${answer.statusCode} ${answer.body.slice(0, 500)}`);
    return status === 204 ? undefined : answer.json();
  };
  return {
    send,
    ok,
    createCollection: (body: Record<string, unknown>) => ok('POST', '/v1/collections', body, 201),
    async upload(collection: string, filename: string, text: string) {
      const body = multipartUpload([{ filename, content: text, contentType: 'text/plain' }]);
      const answer = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...headers, ...body.headers }, payload: body.payload });
      onAnswer(answer);
      if (answer.statusCode !== 202) throw new Error(`upload: ${answer.statusCode} ${answer.body}`);
      return answer.json() as { id: string };
    },
    /** Waits for the collection's documents to settle and returns them (each listing answer is seen by `onAnswer` too). */
    async settle(collection: string, timeoutMs = 60_000) {
      const documents = await waitForIngestion(app, collection, headers, timeoutMs);
      onAnswer({ statusCode: 200, body: JSON.stringify(documents), json: () => documents });
      return documents;
    },
    query: (collection: string, body: Record<string, unknown>) => ok('POST', `/v1/collections/${collection}/query`, { skip_cache: true, ...body }),
    stats: (collection: string) => ok('GET', `/v1/collections/${collection}/stats`),
  };
}
