/**
 * The thread side of parsing-thread.ts: parses one file with the built-in parser named in the
 * message and posts the elements back (their picture bytes arrive as Uint8Array).
 */
import { parentPort } from 'node:worker_threads';
import { builtInParsers } from '../../plugins/parser/index.js';
import type { Parser } from '../plugins.js';
import { errorFields, READY_ID, type ThreadAnswer } from '../threads/thread-requests.js';

interface ParsingTask {
  id: number;
  parser: string;
  filename: string;
  contentType: string;
  data: Uint8Array;
}

const parsers = new Map<string, Parser>(builtInParsers.map((definition) => {
  const parser = definition.create({}, {});
  return [parser.name, parser];
}));

const port = parentPort!;
port.on('message', async ({ id, parser, filename, contentType, data }: ParsingTask) => {
  try {
    const parsed = await parsers.get(parser)!.parse({ filename, contentType, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength) });
    port.postMessage({ id, result: parsed } satisfies ThreadAnswer);
  } catch (error) {
    port.postMessage({ id, error: errorFields(error) } satisfies ThreadAnswer);
  }
});
port.postMessage({ id: READY_ID, result: null } satisfies ThreadAnswer);
