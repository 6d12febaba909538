import { Writable } from 'node:stream';

export interface LogLine {
  level: number;
  msg?: string;
  err?: { message?: string };
}

/** A pino destination that keeps every line it is given, parsed, for tests that check the log. */
export function logLines(): { lines: LogLine[]; stream: Writable } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { lines, stream };
}
