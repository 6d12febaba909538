import type { ValidateFunction } from 'ajv';
import { compileMetadataSchema } from '../collections/metadata-schema.js';
import type { CollectionRecord } from '../db/entities/index.js';
import { BadRequestError, ConflictError } from '../errors.js';
import { metadataFieldPath } from '../search/filters/field-path.js';
import { valueAtPath } from '../search/filters/match-filter.js';
import { excessNestingDetail, unstorableValueDetail } from '../db/storable-values.js';

const compiled = new Map<string, ValidateFunction>();

function validatorFor(collection: CollectionRecord): ValidateFunction | null {
  if (!collection.metadataSchema) return null;
  const cacheKey = `${collection.id}:${JSON.stringify(collection.metadataSchema)}`;
  let validate = compiled.get(cacheKey);
  if (!validate) {
    validate = compileStoredSchema(collection, collection.metadataSchema);
    compiled.set(cacheKey, validate);
  }
  return validate;
}

/**
 * A schema stored before create refused what it holds (a backtracking pattern, a quadratic
 * `uniqueItems`) is not run: its check could hold the process. The collection's owner fixes it.
 */
function compileStoredSchema(collection: CollectionRecord, schema: Record<string, unknown>): ValidateFunction {
  try {
    return compileMetadataSchema(schema);
  } catch (error) {
    if (!(error instanceof BadRequestError)) throw error;
    throw new ConflictError(`collection ${collection.name} cannot check metadata until its metadata_schema is updated (PATCH /v1/collections/${collection.name}): stored before the current rules, its ${error.message}`);
  }
}

/** Parses the `metadata` form field of an upload: a JSON object as a string. */
export function parseMetadataField(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined || raw.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new BadRequestError('metadata must be a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BadRequestError('metadata must be a JSON object');
  // A form field escapes the JSON-body checks of src/http/json-body.ts and unstorable-values.ts.
  const unstorable = excessNestingDetail(value, 'metadata') ?? unstorableValueDetail(value, 'metadata');
  if (unstorable) throw new BadRequestError(unstorable);
  return value as Record<string, unknown>;
}


/**
 * Checks metadata against the collection's `metadata_schema` and returns the tenant value when
 * the collection has a `tenant_field` (required then: 400 naming the field).
 */
export function checkMetadata(collection: CollectionRecord, metadata: Record<string, unknown>, where = 'metadata'): string | null {
  const validate = validatorFor(collection);
  if (validate && !validate(metadata)) {
    const reasons = (validate.errors ?? []).map((error) => `${where}${error.instancePath.replaceAll('/', '.')} ${error.message ?? 'is invalid'}`);
    throw new BadRequestError(`${where} does not match the collection's metadata_schema: ${reasons.join('; ')}`, { errors: validate.errors });
  }
  return tenantOf(collection, metadata, where);
}

/**
 * The path of the collection's `tenant_field` in metadata, read as a query filter reads that field
 * (a dotted path into nested metadata, see `metadataFieldPath`). A field with an empty segment,
 * refused at create since, is read as the flat key it once was.
 */
export function tenantFieldPath(collection: CollectionRecord): string[] | null {
  const field = collection.tenantField;
  return field ? metadataFieldPath(field) ?? [field] : null;
}

/**
 * The tenant value, as text (the `tenant` columns): what the collection's `tenant_field` names in
 * the metadata. Tenants are this text everywhere (queries, BM25 statistics, duplicates, raw-vector
 * ids), so the number 5 and the string "5" are one tenant.
 */
export function tenantOf(collection: CollectionRecord, metadata: Record<string, unknown>, where = 'metadata'): string | null {
  const field = collection.tenantField;
  const path = tenantFieldPath(collection);
  if (!field || !path) return null;
  const tenant = tenantText(valueAtPath(metadata, path), `${where}.${field}`);
  if (tenant !== undefined) return tenant;
  throw new BadRequestError(`${where}.${field} is required: collection ${collection.name} separates tenants by "${field}"${nestedShapeHint(field, path, metadata)}`);
}

/**
 * The tenant a value names, as text (the `tenant` columns), or undefined when there is none. A value
 * that names no tenant (an object, null, "") is a 400 saying what it is: it said the field was required.
 */
export function tenantText(value: unknown, where: string): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === undefined) return undefined;
  const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : 'an empty string';
  throw new BadRequestError(`${where} must be a non-empty string, a number or a boolean, the tenant; it is ${kind}`);
}

/** For a dotted tenant field, the shape expected, and why a flat key of that name is not it. */
function nestedShapeHint(field: string, path: string[], metadata: Record<string, unknown>): string {
  if (path.length === 1) return '';
  const shape = path.reduceRight((inner, segment) => `{${JSON.stringify(segment)}: ${inner}}`, '"<tenant>"');
  const flat = Object.hasOwn(metadata, field) ? ` (a key named ${JSON.stringify(field)} is not that path: filters read dots as nesting)` : '';
  return `, a path into nested metadata: send ${shape}${flat}`;
}
