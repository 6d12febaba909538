// An unpaired UTF-16 surrogate is a code point of category Cs once the string is read as code points.
const UNSTORABLE = /\u0000|\p{Cs}/u;

/**
 * The path of the first string (or field name) in a JSON-like value that PostgreSQL cannot store
 * as text or jsonb: one holding a NUL character or half a surrogate pair. Null when there is none.
 */
export function findUnstorableText(value: unknown, path: string): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? path : null;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const element: unknown = value[index];
      // Numbers are most of a body of vectors: skipped without a call.
      if (typeof element === 'number' || typeof element === 'boolean' || element === null) continue;
      const found = findUnstorableText(element, `${path}[${index}]`);
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const key in value) {
      if (UNSTORABLE.test(key)) return `${path} (a field name)`;
      const found = findUnstorableText((value as Record<string, unknown>)[key], `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

/** The 400 detail for text found by findUnstorableText. */
export function unstorableTextDetail(path: string): string {
  return `${path} contains a NUL character (\\u0000) or half a surrogate pair, which cannot be stored`;
}
