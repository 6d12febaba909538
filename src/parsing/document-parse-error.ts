/**
 * A file its parser cannot read. The message starts with where reading stopped ("PDF document
 * structure", "DOCX zip container", "JSONL line 7"), so the document's `error` ("parsing failed:
 * DOCX zip container: ...") tells its owner what is wrong with the file, not only that it failed.
 */
export class DocumentParseError extends Error {
  constructor(readonly stage: string, reason: string) {
    super(`${stage}: ${reason}`);
    this.name = 'DocumentParseError';
  }
}

/** The message of anything thrown, without a trailing period (it is embedded in a sentence). */
export function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.trim().replace(/\.$/, '');
}
