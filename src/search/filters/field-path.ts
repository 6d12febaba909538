/** Characters a backslash makes literal in a field: the separator, the backslash, and `$`. */
const ESCAPABLE = new Set(['.', '\\', '$']);

/**
 * A metadata field as filters address it: its dotted path (`org.id` is `{"org": {"id": ...}}`), or
 * null when a segment is empty (`a..b`, `.a`, `a.`). A backslash makes the next `.`, `\` or `$`
 * part of the key: `file\.name` is the key "file.name" (S3 object metadata and other exports use
 * dotted keys, which no filter could reach), `\$and` the key "$and" rather than the combinator.
 * A backslash before any other character is itself. A collection's `tenant_field` is read the
 * same way, so the tenant an upload must carry is the value a query's tenant filter reads.
 */
export function metadataFieldPath(field: string): string[] | null {
  const path: string[] = [];
  let segment = '';
  for (let index = 0; index < field.length; index++) {
    const character = field[index]!;
    const next = field[index + 1];
    if (character === '\\' && next !== undefined && ESCAPABLE.has(next)) {
      segment += next;
      index++;
    } else if (character === '.') {
      path.push(segment);
      segment = '';
    } else {
      segment += character;
    }
  }
  path.push(segment);
  return path.some((segment) => segment === '') ? null : path;
}
