import type { ParsedDocument, Parser, ParserInput } from '../plugins.js';
import { startModuleWorker } from '../threads/module-worker.js';
import { ThreadRequests } from '../threads/thread-requests.js';
import { DocumentParseError } from './document-parse-error.js';

export interface ParsingThreadLimits {
  /** Files at least this large are parsed on a thread of their own; smaller ones where they are (PARSE_ON_THREAD_MIN_BYTES). */
  minBytes: number;
  /** The thread's heap (PARSE_MEMORY_LIMIT_MB). */
  memoryMb: number;
  /** The thread is stopped after this long (PARSE_TIMEOUT_S). */
  timeoutMs: number;
}

/**
 * A built-in parser that reads large files on a worker thread of their own, started for the file
 * and ended after it. Parsing is synchronous work (a 1 MB Markdown list takes ~1.5 s) that would
 * keep every request of the process waiting, and a file that needs more memory or time than its
 * limits fails alone, its thread stopped, where it used to take the whole process down.
 */
export function parseLargeFilesOnThreads(parser: Parser, limits: ParsingThreadLimits): Parser {
  return {
    name: parser.name,
    contentTypes: parser.contentTypes,
    extensions: parser.extensions,
    ...(parser.mayHoldScans ? { mayHoldScans: true } : {}),
    parse: (input) => (input.data.length < limits.minBytes ? parser.parse(input) : parseOnThread(parser.name, input, limits)),
  };
}

async function parseOnThread(parserName: string, input: ParserInput, limits: ParsingThreadLimits): Promise<ParsedDocument> {
  const worker = startModuleWorker(import.meta.url, 'parsing-worker', { resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb } });
  const thread = new ThreadRequests(worker, `${parserName} parsing`);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DocumentParseError(`the ${parserName} parser`, `it took longer than ${limits.timeoutMs / 1000} s (PARSE_TIMEOUT_S)`)), limits.timeoutMs);
  });
  try {
    const parsing = thread.request<ParsedDocument>({ parser: parserName, filename: input.filename, contentType: input.contentType, data: input.data });
    // After a timeout the thread is ended, which fails this request with no one left to hear it.
    parsing.catch(() => undefined);
    const parsed = await Promise.race([parsing, timedOut]);
    return withByteBuffers(parsed);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
      throw new DocumentParseError(`the ${parserName} parser`, `the file needs more than ${limits.memoryMb} MB of memory to parse (PARSE_MEMORY_LIMIT_MB)`);
    }
    throw error;
  } finally {
    clearTimeout(timer);
    await thread.terminate('parsing ended');
  }
}

function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** Picture and attachment bytes cross the thread boundary as Uint8Array; the rest of the service expects Buffers. */
function withByteBuffers(parsed: ParsedDocument): ParsedDocument {
  for (const element of parsed.elements) {
    if (element.image) element.image.data = asBuffer(element.image.data);
  }
  for (const attachment of parsed.attachments ?? []) attachment.data = asBuffer(attachment.data);
  return parsed;
}
