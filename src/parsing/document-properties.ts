/**
 * The document properties a file declares (PDF Info, DOCX core properties, HTML <meta>), reported by
 * every parser under the same `metadata` keys and rules.
 */
/** Runs of whitespace, line breaks included, as one space; none at either end. */
export function collapseWhitespace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** What a file declares about itself, raw: strings as found, dates already parsed by the format's rules. */
export interface DocumentPropertyValues {
  author?: unknown;
  description?: unknown;
  /** One string, keywords separated by commas or semicolons. */
  keywords?: unknown;
  created?: Date | null;
  modified?: Date | null;
}

function propertyText(value: unknown): string | undefined {
  const text = typeof value === 'string' ? collapseWhitespace(value) : '';
  return text.length > 0 ? text : undefined;
}

function propertyKeywords(value: unknown): string[] | undefined {
  if (typeof value !== 'string') return undefined;
  const keywords = [...new Set(value.split(/[,;]/).map(collapseWhitespace).filter((keyword) => keyword.length > 0))];
  return keywords.length > 0 ? keywords : undefined;
}

function propertyDate(value: Date | null | undefined): string | undefined {
  return value && Number.isFinite(value.getTime()) ? value.toISOString() : undefined;
}

/**
 * The `metadata` keys every parser reports for document properties (`author`, `description`,
 * `keywords`, `created_at`, `modified_at`), blank and unparseable values left out, so a key's
 * presence always means the file said something.
 */
export function documentPropertyMetadata(values: DocumentPropertyValues): Record<string, unknown> {
  const entries: Record<string, unknown> = {
    author: propertyText(values.author),
    description: propertyText(values.description),
    keywords: propertyKeywords(values.keywords),
    created_at: propertyDate(values.created),
    modified_at: propertyDate(values.modified),
  };
  return Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));
}
