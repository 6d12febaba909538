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

/** `String.prototype.isWellFormed` and `toWellFormed`: ES2024, in Node since 20, past the project's TypeScript lib (ES2023). */
type WellFormedString = string & { isWellFormed(): boolean; toWellFormed(): string };

/**
 * `text` as PostgreSQL can store it in text and in jsonb: each NUL character and each half of a
 * surrogate pair becomes U+FFFD, the replacement character, as CommonMark and HTML read `&#0;` and
 * `&#xD800;`. One UTF-16 unit for one, so offsets into the text stay true. The same string when
 * nothing needs replacing, found by the engine's own checks: 200 MB of ASCII in 25 ms, of text
 * with emoji in 0.5 s, where the UNSTORABLE_TEXT pattern took 0.4 s and 1.8 s.
 */
export function storableText(text: string): string {
  const checked = text as WellFormedString;
  if (checked.isWellFormed() && !text.includes('\u0000')) return text;
  return checked.toWellFormed().replaceAll('\u0000', '\ufffd');
}

/**
 * A JSON-like value whose strings, field names included, are all storable (storableText). The value
 * itself when nothing needed replacing, else a copy of the parts that changed. An object with
 * `toJSON` (a Date) is stored as what that gives, so it is taken as that.
 */
export function storableValue<T>(value: T): T {
  return storableJsonValue(value) as T;
}

function storableJsonValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (value === null || typeof value !== 'object') return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    const json = JSON.stringify(value);
    return json === undefined ? undefined : storableJsonValue(JSON.parse(json));
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let index = 0; index < value.length; index++) {
      const element: unknown = value[index];
      const storable = storableJsonValue(element);
      if (storable !== element) (copy ??= value.slice())[index] = storable;
    }
    return copy ?? value;
  }
  // Copied only from the first field that changes: most values have nothing to replace.
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let copy: Array<[string, unknown]> | undefined;
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    const field = record[key];
    const storableKey = storableText(key);
    const storableField = storableJsonValue(field);
    if (!copy && (storableKey !== key || storableField !== field)) copy = keys.slice(0, index).map((earlier) => [earlier, record[earlier]]);
    copy?.push([storableKey, storableField]);
  }
  // fromEntries defines the fields: a field named __proto__ stays a field.
  return copy ? Object.fromEntries(copy) : value;
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
