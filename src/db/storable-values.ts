// An unpaired UTF-16 surrogate is a code point of category Cs once the string is read as code points.
const UNSTORABLE_TEXT = /\u0000|\p{Cs}/u;

const textDetail = (path: string) => `${path} contains a NUL character (\\u0000) or half a surrogate pair, which cannot be stored`;
const numberDetail = (path: string) => `${path} is a number beyond the range of a double (about ±1.8e308), which cannot be stored`;

/**
 * Why a JSON-like value cannot be stored as PostgreSQL text or jsonb, naming the path of its first
 * such part; null when it can. Text must not hold a NUL character or half a surrogate pair (a
 * field name neither). A number must be finite: JSON has no infinity, but `JSON.parse` reads
 * 1e400 as one, and `JSON.stringify` would write it back as null, changing the value unseen.
 */
export function unstorableValueDetail(value: unknown, path: string): string | null {
  if (typeof value === 'string') return UNSTORABLE_TEXT.test(value) ? textDetail(path) : null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : numberDetail(path);
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const element: unknown = value[index];
      // Numbers are most of a body of vectors: checked without a call.
      if (typeof element === 'number') {
        if (!Number.isFinite(element)) return numberDetail(`${path}[${index}]`);
        continue;
      }
      if (typeof element === 'boolean' || element === null) continue;
      const found = unstorableValueDetail(element, `${path}[${index}]`);
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const key in value) {
      if (UNSTORABLE_TEXT.test(key)) return textDetail(`${path} (a field name)`);
      const found = unstorableValueDetail((value as Record<string, unknown>)[key], `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

/**
 * How deep JSON may nest: a request body, an upload's metadata. PGlite's jsonb code ran out of
 * WebAssembly memory on metadata about 1,000 levels deep and took the database down for every
 * request after; at 5,000 levels the recursive checks of a body overflowed the stack (a 500).
 * Metadata of real documents nests a few levels.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Why a JSON value nests too deep to be taken, naming where; null when it does not. Walked without
 * recursion, as it guards the recursive code after it.
 */
export function excessNestingDetail(value: unknown, path: string): string | null {
  const pending: Array<[unknown, number]> = [[value, 1]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) return `${path} nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels, which is refused`;
    for (const child of Object.values(current)) if (child !== null && typeof child === 'object') pending.push([child, depth + 1]);
  }
  return null;
}
