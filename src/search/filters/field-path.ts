/**
 * A metadata field as filters address it: its dotted path (`org.id` is `{"org": {"id": ...}}`), or
 * null when a segment is empty (`a..b`, `.a`, `a.`). A collection's `tenant_field` is read the same
 * way, so the tenant an upload must carry is the value a query's tenant filter reads.
 */
export function metadataFieldPath(field: string): string[] | null {
  const path = field.split('.');
  return path.some((segment) => segment === '') ? null : path;
}
