import type { MetadataFilter } from './filter-types.js';

export interface TenantEqualitySplit {
  /** The tenant, as text (the `tenant` columns), or null when the filter names none. */
  tenant: string | null;
  /** The filter without that condition; undefined when nothing else is left. */
  rest: MetadataFilter | undefined;
}

/**
 * Takes a top-level equality on the collection's `tenant_field` out of a filter, as the tenant's
 * text. Tenants are compared as text (the `tenant` columns, and the search indexes' partitions),
 * so the number 5 and the string "5" are one tenant; the same condition left in the metadata
 * filter would compare JSON values and tell them apart again. Other conditions on the field stay.
 */
export function splitTenantEquality(filter: MetadataFilter | undefined, tenantField: string | null | undefined): TenantEqualitySplit {
  const none = { tenant: null, rest: filter };
  if (!filter || !tenantField) return none;
  // A scalar names a tenant as tenantText reads it; null and "" name none.
  const tenantOf = (part: MetadataFilter): string | null =>
    part.kind === 'field' && part.field === tenantField && part.condition.operator === '$eq' && part.condition.value !== null && part.condition.value !== ''
      ? String(part.condition.value)
      : null;
  const whole = tenantOf(filter);
  if (whole !== null) return { tenant: whole, rest: undefined };
  if (filter.kind !== 'and') return none;
  const index = filter.filters.findIndex((part) => tenantOf(part) !== null);
  if (index < 0) return none;
  const kept = filter.filters.filter((_, position) => position !== index);
  return { tenant: tenantOf(filter.filters[index]!), rest: kept.length === 1 ? kept[0] : { kind: 'and', filters: kept } };
}
